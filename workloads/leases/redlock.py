"""``redlock``: the Redlock algorithm as published, over every node of ``--topology redlock``.

Acquire: a fresh token; ``SET key token NX PX ttl`` on each master in turn; the attempt wins when
a majority said OK and time is left — validity = ttl − elapsed − drift, with
drift = 1% of the ttl + 2 ms for the masters' clocks running at different rates. Otherwise it
releases everywhere (a master that answered late may hold the key) and reports False.
Release: compare-and-delete of the token on every master; True when any master deleted it.

A master that raises counts as one that said no: the algorithm needs only a majority. Its safety
rests on every master's clock: a master whose clock jumps forward expires the key early, and a
second client can then win a majority that shares that master with the first.
"""
from __future__ import annotations

import secrets
import time

from leasecheck.workloads.leases.scripts import COMPARE_AND_DELETE

CLOCK_DRIFT_FACTOR = 0.01
CLOCK_DRIFT_MS = 2


def drift_ms(ttl_ms: int) -> float:
    return CLOCK_DRIFT_FACTOR * ttl_ms + CLOCK_DRIFT_MS


def validity_ms(ttl_ms: int, elapsed_ms: float) -> float:
    """How long a lock won now stays valid: what is left of the ttl after the acquire took
    ``elapsed_ms``, less the clock drift."""
    return ttl_ms - elapsed_ms - drift_ms(ttl_ms)


class Redlock:
    nodes = "all"    # one client per node (leasecheck.harness.stores.topology)

    def __init__(self, clients, key: str, ttl_ms: int):
        self.clients, self.key, self.ttl_ms = list(clients), key, ttl_ms
        self.quorum = len(self.clients) // 2 + 1
        self.token = secrets.token_hex(16)
        self.validity_ms: float | None = None      # after a won acquire
        self._release = [c.register_script(COMPARE_AND_DELETE) for c in self.clients]

    def acquire(self) -> bool:
        start = time.monotonic()
        won = 0
        for client in self.clients:
            try:
                won += bool(client.set(self.key, self.token, nx=True, px=self.ttl_ms))
            except Exception:  # noqa: BLE001 - an unreachable master is a master that said no
                pass
        validity = validity_ms(self.ttl_ms, (time.monotonic() - start) * 1000)
        if won >= self.quorum and validity > 0:
            self.validity_ms = validity
            return True
        self._release_all()
        return False

    def release(self) -> bool:
        return self._release_all() > 0

    def _release_all(self) -> int:
        deleted = 0
        for script in self._release:
            try:
                deleted += script(keys=[self.key], args=[self.token]) == 1
            except Exception:  # noqa: BLE001 - the key there expires on its own
                pass
        return deleted
