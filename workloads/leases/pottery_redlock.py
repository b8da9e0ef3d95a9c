"""``pottery-redlock``: an adapter over pottery's ``Redlock`` with one master, the harness's
client — ``Redlock(key=job key, masters={client}, auto_release_time=TTL)``, non-blocking
``acquire``, ``release``.

What the library sends (3.0.1), each from a thread of its own pool on the same client (so on the
slot's audited connections): acquire ``SET redlock:<key> <uuid4> NX PX <ms>`` — and, when that did
not win, a Lua compare-and-delete of the same uuid to clean up; release the Lua compare-and-delete.
Its claim lives under ``redlock:`` + the job key.

* A release that deletes nothing raises ``ReleaseUnlockedLock``: that is "found nothing" (False).
* ``raise_on_redis_errors=True``: by default the library logs a store error and answers "not
  acquired" / ``ReleaseUnlockedLock``, which would record a command that may well have run as
  certainly not having happened. Raised, the error is what it is — an unknown outcome.
* No renewal (the library allows only three ``extend()`` calls per lock by default).
* Importing pottery replaces ``json.dumps`` process-wide with a version whose default encoder
  also serialises pottery's containers; the plain records the harness writes come out the same.
"""
from __future__ import annotations

import math

from workloads.leases.extras import require

pottery = require("pottery", "pottery", "pottery-redlock")


def auto_release_time(ttl_ms: int) -> float:
    """Seconds such that pottery's ``int(seconds * 1000)`` is exactly ``ttl_ms`` (0.57 s would
    otherwise become PX 569), so the claim in the store lives as long as the run says it does."""
    seconds = ttl_ms / 1000
    while int(seconds * 1000) < ttl_ms:
        seconds = math.nextafter(seconds, math.inf)
    return seconds


class PotteryRedlock:
    def __init__(self, client, key: str, ttl_ms: int):
        self.lock = pottery.Redlock(key=key, masters={client}, auto_release_time=auto_release_time(ttl_ms),
                                    raise_on_redis_errors=True)

    def acquire(self) -> bool:
        return bool(self.lock.acquire(blocking=False))

    def release(self) -> bool:
        try:
            self.lock.release()
        except pottery.ReleaseUnlockedLock:
            return False
        return True
