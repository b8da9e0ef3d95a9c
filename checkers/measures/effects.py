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

from leasecheck.checkers.model.claims import Claim
from leasecheck.checkers.read.ops import Op
from leasecheck.events import F_EFFECT, OK


def stale_effects(ops: list[Op], stale: dict[int, bool | None], events: list[tuple] | None = None,
                  claims: list | None = None, clock=None) -> dict | None:
    """`ops`: the sink writes (``--sink``) and `stale` the model's judgement of each; else
    `events`: the history's `effect` events as (attempt, history time) pairs."""
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


def _from_history(effects: list[tuple], claims: list | None, clock) -> dict | None:
    """Effects recorded only in the history, judged on the history clock against the claims of
    their attempt (docs/history.md, "Stale effects"): live when some claim certainly covered the
    effect's time, stale when none can have, undecided otherwise (None for all without an audit)."""
    if not effects:
        return None
    if claims is None or clock is None:
        return {"effects": len(effects), "without_fence": None, "with_fence": None,
                "turned_away_by_fence": None, "undecided": len(effects), "measured_by": "history"}
    bounds: dict[str, list[tuple[float, float, float, float]]] = {}
    slack = getattr(clock, "slack_ns", 0)
    c: Claim     # (typed: compiled, its fields are read natively)
    for c in claims:
        if c.owner is not None:
            bounds.setdefault(c.owner, []).append(_claim_bounds(c, clock, slack))
    stale = undecided = 0
    for attempt, t in effects:
        verdict = _judge(t, bounds.get(attempt, []))
        if verdict is None:
            undecided += 1
        elif verdict:
            stale += 1
    return {"effects": len(effects), "without_fence": stale, "with_fence": None,
            "turned_away_by_fence": None, "undecided": undecided, "measured_by": "history"}


def _claim_bounds(c: Claim, clock, slack: int) -> tuple[float, float, float, float]:
    """(earliest and latest start, earliest and latest end) of claim `c` on the history clock: from
    the calls whose commands created and ended it where they are known (their invocation and
    completion), else from its store times converted, give or take the clock's `slack`."""
    s_lo, s_hi = c.born_ns, c.made_ns
    if s_lo is None or s_hi is None:       # (converted only where a call does not say)
        at = clock.to_history_ns(c.created)
        s_lo = at - slack if s_lo is None else s_lo
        s_hi = at + slack if s_hi is None else s_hi
    if c.ended is None:
        return s_lo, s_hi, INF, INF
    e_lo, e_hi = c.end_lo_ns, c.end_hi_ns
    if e_lo is None or e_hi is None:
        gone = clock.to_history_ns(c.ended)
        e_lo = gone - slack if e_lo is None else e_lo
        e_hi = gone + slack if e_hi is None else e_hi
    return s_lo, s_hi, e_lo, e_hi


def _judge(t: int, spans: list[tuple[float, float, float, float]]) -> bool | None:
    """Whether an effect at history time `t` was stale: False when one of its attempt's claims
    surely covered `t` (started by then, ended after), True when none can have (each started
    after `t` or ended by then), None otherwise."""
    unsure = False
    for s_lo, s_hi, e_lo, e_hi in spans:
        if s_hi <= t < e_lo:
            return False
        if s_lo <= t < e_hi:
            unsure = True
    return None if unsure else True


INF = float("inf")
