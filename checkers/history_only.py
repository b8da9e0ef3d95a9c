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

from .ops import Op


def proven_foreign_releases(ops: list[Op], ttl_ms: float | None, events: list[dict]) -> list[Op] | None:
    """Release calls proven foreign from the history; None when nothing can be proven (no TTL,
    or the store's clock was stepped)."""
    if not ttl_ms:
        return None
    if any(e.get("type") == "fault_start" and e.get("fault") == "clock" and e.get("target") == "store"
           for e in events):
        return None
    acquired: dict[str, int] = {}
    for op in ops:
        if op.f == "acquire" and op.type == "ok" and op.value is True:
            acquired[op.attempt] = op.end_time
    proven = []
    for op in ops:
        if op.f != "release" or op.type != "ok" or op.value is not True:
            continue
        done = acquired.get(op.attempt)
        if done is not None and op.invoke_time - done > ttl_ms * 1e6:
            proven.append(op)
    return proven
