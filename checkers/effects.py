"""Stale effects: a job's effect written when its attempt no longer held a live claim (the
deadline passed, another attempt removed it, it was evicted or lost in a restart).

Measured only with ``--sink``, where each effect is a store write the audit places exactly
(``claims.simulate`` judges it in store order). ``without_fence`` counts the stale effects the
plain sink accepted (all of them); ``with_fence`` those the fenced sink still accepted — a stale
holder gets through a fence only until a later claimer has written. ``with_fence`` is None when
the lease hands out no fencing token; ``undecided`` counts effects the model could not judge.
"""
from __future__ import annotations

from .ops import Op


def stale_effects(ops: list[Op], stale: dict[int, bool | None]) -> dict | None:
    effects = [op for op in ops if op.f == "effect" and op.type == "ok"]
    if not effects:
        return None
    fenced = any(op.done.get("fence") is not None for op in effects)
    judged = [op for op in effects if stale.get(op.index) is True]
    return {
        "effects": len(effects),
        "without_fence": len(judged),
        "with_fence": sum(op.value is True for op in judged) if fenced else None,
        "turned_away_by_fence": sum(op.value is False for op in effects) if fenced else None,
        "undecided": sum(stale.get(op.index) is None for op in effects),
    }
