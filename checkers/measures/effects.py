"""Stale effects: a job's effect written when its attempt no longer held a live claim (the
deadline passed, another attempt removed it, it was evicted or lost in a restart).

With ``--sink`` each effect is a store write the audit places exactly (``claims.simulate``
judges it in store order): ``without_fence`` counts the stale effects the plain sink accepted (all
of them); ``with_fence`` those the fenced sink still accepted — a stale holder gets through a
fence only until a later claimer has written. ``with_fence`` is None when the lease hands out no
fencing token. Without ``--sink`` an effect is only a history event: its time is placed on the
store's clock (``store-clock.jsonl``) and judged against its attempt's claim, and ``measured_by``
says ``history``. ``undecided`` counts effects that could not be judged.
"""
from __future__ import annotations

from leasecheck.checkers.read.ops import Op
from leasecheck.events import EFFECT, F_EFFECT, OK, TYPE


def stale_effects(ops: list[Op], stale: dict[int, bool | None], events: list[dict] | None = None,
                  claims: list | None = None, clock=None) -> dict | None:
    effects = [op for op in ops if op.f == F_EFFECT and op.type == OK]
    if not effects:
        return _from_history(events or [], claims, clock)
    fenced = any(op.fence is not None for op in effects)
    judged = [op for op in effects if stale.get(op.index) is True]
    return {
        "effects": len(effects),
        "without_fence": len(judged),
        "with_fence": sum(op.value is True for op in judged) if fenced else None,
        "turned_away_by_fence": sum(op.value is False for op in effects) if fenced else None,
        "undecided": sum(stale.get(op.index) is None for op in effects),
        "measured_by": "audit",
    }


def _from_history(events: list[dict], claims: list | None, clock) -> dict | None:
    """Effects recorded only in the history: stale when the store-clock time of the event falls
    outside every claim of its attempt (None when there is no audit to know the claims)."""
    effects = [e for e in events if e.get(TYPE) == EFFECT]
    if not effects:
        return None
    if claims is None or clock is None:
        return {"effects": len(effects), "without_fence": None, "with_fence": None,
                "turned_away_by_fence": None, "undecided": len(effects), "measured_by": "history"}
    spans: dict[str, list[tuple[float, float]]] = {}
    for c in claims:
        if c.owner is not None:
            spans.setdefault(c.owner, []).append((c.created, c.ended if c.ended is not None else float("inf")))
    stale = 0
    for e in effects:
        t = clock.to_store_s(e["time"])
        if not any(a <= t < b for a, b in spans.get(e.get("attempt"), [])):
            stale += 1
    return {"effects": len(effects), "without_fence": stale, "with_fence": None,
            "turned_away_by_fence": None, "undecided": 0, "measured_by": "history"}
