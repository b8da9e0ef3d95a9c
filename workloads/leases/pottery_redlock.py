"""``pottery-redlock`` and ``pottery-redlock-n``: adapters over pottery's ``Redlock`` —
``Redlock(key=job key, masters=..., auto_release_time=TTL)``, non-blocking ``acquire``, ``release``.

``pottery-redlock`` has one master, the harness's client (``--topology single``);
``pottery-redlock-n`` declares ``nodes = "all"`` and takes every master of
``--topology redlock --nodes N`` (``masters`` = one audited client per node).

What the library sends (3.0.1), each from a thread of its own pool: acquire ``SET redlock:<key>
<uuid4> NX PX <ms>`` on every master — and, when that did not win, a Lua compare-and-delete of
the same uuid on every master to clean up; release the Lua compare-and-delete on every master.
Its claim lives under ``redlock:`` + the job key. It implements the published algorithm with
its drift (validity = ttl − 1% of the ttl − 2 ms − elapsed), and so does ``redlock``.

* It returns as soon as a majority answered: ``acquire`` after the (N // 2 + 1)-th ``OK``,
  ``release`` after the (N // 2 + 1)-th delete. The other masters' commands are still on their
  way (its ``BailOutExecutor`` does not wait for them) and reach the store after the call
  returned. The pool's tasks here run in a copy of the calling thread's context, so the harness
  knows which call they belong to and records them as ``late_sent`` of that call
  (``leasecheck.harness.record.connection``) instead of crediting them to the slot's next call. Nothing else
  about the library changes: its threads, its timing and its answer are its own. (With one
  master nothing is left in flight: the majority is everyone.)
* A release that deletes nothing on a majority raises ``ReleaseUnlockedLock``: that is "found
  nothing" (False).
* ``raise_on_redis_errors=True``: by default the library logs a store error and answers "not
  acquired" / ``ReleaseUnlockedLock``, which would record a command that may well have run as
  certainly not having happened. Raised, the error is what it is — an unknown outcome. (Raised
  only when a majority of masters failed; fewer failures are the algorithm's to absorb.)
* No renewal (the library allows only three ``extend()`` calls per lock by default).
* Importing pottery replaces ``json.dumps`` process-wide with a version whose default encoder
  also serialises pottery's containers; the plain records the harness writes come out the same.
"""
from __future__ import annotations

import contextvars
import math

from leasecheck.workloads.leases.extras import require

pottery = require("pottery", "pottery", "pottery-redlock")


class _CallContextExecutor(pottery.executor.BailOutExecutor):
    """pottery's executor, each task run in a copy of the submitting thread's context."""

    def submit(self, fn, /, *args, **kwargs):
        return super().submit(contextvars.copy_context().run, fn, *args, **kwargs)


# The name pottery's Redlock looks up when it scatters a call over the masters.
pottery.redlock.BailOutExecutor = _CallContextExecutor


def auto_release_time(ttl_ms: int) -> float:
    """Seconds such that pottery's ``int(seconds * 1000)`` is exactly ``ttl_ms`` (0.57 s would
    otherwise become PX 569), so the claim in the store lives as long as the run says it does."""
    seconds = ttl_ms / 1000
    while int(seconds * 1000) < ttl_ms:
        seconds = math.nextafter(seconds, math.inf)
    return seconds


class PotteryRedlock:
    def __init__(self, client, key: str, ttl_ms: int):
        self.lock = self._lock({client}, key, ttl_ms)

    @staticmethod
    def _lock(masters: set, key: str, ttl_ms: int):
        return pottery.Redlock(key=key, masters=masters, auto_release_time=auto_release_time(ttl_ms),
                               raise_on_redis_errors=True)

    def acquire(self) -> bool:
        return bool(self.lock.acquire(blocking=False))

    def release(self) -> bool:
        try:
            self.lock.release()
        except pottery.ReleaseUnlockedLock:
            return False
        return True


class PotteryRedlockN(PotteryRedlock):
    nodes = "all"    # one client per master (leasecheck.harness.stores.topology)

    def __init__(self, clients, key: str, ttl_ms: int):
        self.lock = self._lock(set(clients), key, ttl_ms)
