"""What the history alone proves when there is no store audit (``--no-audit``, or a store that
refuses ``MONITOR``).

A release that *deleted something* after its own claim had certainly expired deleted somebody
else's claim: nobody else writes this attempt's claim back, so whatever was under the key then
was another attempt's. "Certainly expired": the call began more than the lease after the acquire
that created the claim had *completed* (the claim's deadline is at most that), and the store's
clock was never stepped during the run (a ``clock:store`` fault voids the argument). Such a
release is a foreign release proven from the history; anything closer to the deadline cannot be
told apart from a release of one's own claim, so the verdict stays "unknown" without the audit.
"""
from __future__ import annotations

from typing import Any

from leasecheck.checkers.read.ops import Op
from leasecheck.events import ACQUIRE, FAULT_START, OK, RELEASE, TYPE


class ForeignProof:
    """Feed completed calls in invocation order; `proven(fault_starts)` returns the releases
    proven foreign (see the module docstring)."""

    def __init__(self, ttl_ms: float | None) -> None:
        self.ttl_ns = ttl_ms * 1e6 if ttl_ms else None
        self.acquired: dict[Any, Any] = {}   # attempt -> completion of its successful acquire
        self.found: list[Op] = []

    def feed(self, op: Op) -> None:
        if op.type != OK or op.value is not True:
            return
        if op.f == ACQUIRE:
            self.acquired[op.attempt] = op.end_time
        elif op.f == RELEASE and self.ttl_ns is not None:
            done = self.acquired.get(op.attempt)
            if done is not None and op.invoke_time - done > self.ttl_ns:
                self.found.append(op)

    def proven(self, fault_starts: list[dict]) -> list[Op] | None:
        """None when nothing can be proven (no TTL, or the store's clock was stepped)."""
        if self.ttl_ns is None or any(e.get(TYPE) == FAULT_START and e.get("fault") == "clock"
                                      and e.get("target") == "store" for e in fault_starts):
            return None
        return sorted(self.found, key=lambda op: op.index)


def proven_foreign_releases(ops: list[Op], ttl_ms: float | None, events: list[dict]) -> list[Op] | None:
    """Release calls proven foreign from the history; None when nothing can be proven (no TTL,
    or the store's clock was stepped)."""
    proof = ForeignProof(ttl_ms)
    for op in ops:
        proof.feed(op)
    return proof.proven(events)
