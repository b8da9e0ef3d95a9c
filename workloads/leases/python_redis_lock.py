"""``python-redis-lock``: an adapter over python-redis-lock's ``redis_lock.Lock`` as a team would
adopt it — ``Lock(client, name, expire=TTL)``, non-blocking ``acquire``, ``release``.

What the library sends (4.0.1): acquire reads ``GET lock:<name>`` (its "already held by this
object" check), then ``SET lock:<name> <random id> NX EX <seconds>``; release is a Lua script that
compares the id, deletes ``lock:<name>`` and pushes a wake-up onto ``lock-signal:<name>`` (a list
that expires after 1 s). Its claim therefore lives under ``lock:`` + the job key, not the job key.

* A release that finds the claim gone or someone else's raises ``NotAcquired``: that is the
  "found nothing" answer (False), not an unknown outcome.
* The library keeps expiries in whole seconds (``int(expire)``, and an expire that truncates to 0
  means *no expiry at all*), so ``check_ttl`` refuses any other ``--ttl`` before the run starts
  rather than test a lease other than the one asked for.
* No renewal: ``auto_renewal`` is off, the library's default. ``python-redis-lock-renew`` renews
  through ``extend()`` from the claim loop instead of the library's thread (which ends silently on
  any error), so each renewal is a recorded call.
"""
from __future__ import annotations

import logging
import math

from leasecheck.workloads.leases.extras import require

redis_lock = require("redis_lock", "python-redis-lock", "python-redis-lock")
# The library logs a WARNING for every acquire that loses (thousands a second here), which would
# bury real errors in the run's workers.log; the history records each of them anyway.
logging.getLogger("redis_lock.acquire").setLevel(logging.ERROR)


class PythonRedisLock:
    def __init__(self, client, key: str, ttl_ms: int):
        self.lock = redis_lock.Lock(client, key, expire=ttl_ms // 1000, auto_renewal=False)

    @staticmethod
    def check_ttl(ttl_ms: int) -> None:
        if ttl_ms % 1000:
            raise ValueError("python-redis-lock keeps a lock's expiry in whole seconds (SET ... EX); "
                             f"give a whole number of seconds, e.g. --ttl {max(1, math.ceil(ttl_ms / 1000))}s")

    def acquire(self) -> bool:
        return bool(self.lock.acquire(blocking=False))

    def release(self) -> bool:
        try:
            self.lock.release()
        except redis_lock.NotAcquired:
            return False
        return True


class PythonRedisLockRenew(PythonRedisLock):
    """Renews with ``Lock.extend()`` (Lua: compare the id, ``EXPIRE`` whole seconds); a claim that
    is gone or someone else's raises ``NotAcquired``, which is a failed renewal (False)."""

    def renew(self) -> bool:
        try:
            self.lock.extend()
        except redis_lock.NotAcquired:
            return False
        return True
