"""Liveness measures on the model's claims: how long each claim stayed after its holder's attempt
ended (stuck claims), which claims had no expiry, how long each was held, how long a dead or hung
holder's key took to come free (recovery), and whose commands kept a claim alive. Nothing is
judged here; `properties/stuck_claims`, `kept_alive`, `recovery` and `max_hold` judge
(docs/history.md, "Liveness").

Times: a claim's creation and end are store times, put on the history clock with the store
clock (`StoreClock.to_history_ns`); a claim still in the store when the audit ended ends, for
these measures, at the history's last event (so its durations are "at least").
"""
from __future__ import annotations

import statistics
from dataclasses import dataclass

from leasecheck.checkers.measures.attempt_ends import hangs, kills
from leasecheck.checkers.model.claims import Claim
from leasecheck.protocol import on_store

EXAMPLES = 5


def allowance_s(ttl_s: float) -> float:
    """What a claim may outlive its holder's attempt by beyond the TTL: the store clock's
    conversion and a last renewal's flight — max(0.25 s, 10 % of the TTL)."""
    return max(0.25, 0.1 * ttl_s)


@dataclass(slots=True)
class ClaimSpan:
    """One claim of a lease call on the history clock."""
    claim: Claim
    created_ns: int
    ended_ns: int
    still_held: bool           # in the store when the audit ended


def spans(m) -> list[ClaimSpan]:
    """Every claim a lease call created (not a replica's copy), with an owner, on the history clock
    (worked out once per measured run: several properties read them)."""
    if m.model is None or m.clock is None:
        return []
    cached = getattr(m, "claim_spans", None)
    if cached is None:
        cached = _spans(m)
        if hasattr(m, "claim_spans"):
            m.claim_spans = cached
    return cached


def _spans(m) -> list[ClaimSpan]:
    to_h, end = m.clock.to_history_ns, m.end or 0
    out = []
    c: Claim     # (typed: compiled, its fields are read natively)
    for c in m.model.claims:
        if c.owner is None or c.copy:
            continue
        held = c.fate == "still_held" or c.ended is None
        out.append(ClaimSpan(c, to_h(c.created), end if held else to_h(c.ended), held))
    return out


class HolderEnds:
    """When (history ns) and how each attempt ended: killed with its worker, else at its last call.
    Looked up per attempt where the digest keeps them: nothing is built per attempt."""

    def __init__(self, m) -> None:
        self.ended: dict[str, int] = m.digest.attempt_ends.ended
        self.how: dict[str, str] = m.digest.attempt_ends.how
        self.killed = kills(m.faults())

    def time(self, attempt: str | None) -> int | None:
        if attempt is None:
            return None
        killed = self.killed.get(attempt) if self.killed else None
        return killed[0] if killed is not None else self.ended.get(attempt)

    def get(self, attempt: str | None) -> tuple[int, str] | None:
        """(history ns, how), or None when the attempt has not ended (or is unknown: None)."""
        if attempt is None:
            return None
        killed = self.killed.get(attempt) if self.killed else None
        if killed is not None:
            return killed
        t = self.ended.get(attempt)
        return (t, self.how[attempt]) if t is not None else None


def clock_steps(m, bound_s: float) -> list[tuple[int, int]]:
    """The spans (history ns) in which the store's clock was stepped: each store clock fault from
    its start less its offset to its heal plus its offset and `bound_s` (a heal steps the clock
    back by the offset, so a claim live then stays that much longer; and a store time near a step
    maps onto the history clock only to within the offset)."""
    out = []
    for f in m.faults():
        if f.get("fault") == "clock" and on_store(f.get("target")):
            size = (f.get("requested") or {}).get("size")
            off = abs(size) if isinstance(size, (int, float)) else 0.0
            end = f["end_s"] if f.get("end_s") is not None else (m.end or 0) / 1e9
            out.append((int((f["start_s"] - off) * 1e9), int((end + off + bound_s) * 1e9)))
    return out


def stuck(m, ttl_s: float) -> tuple[list[dict], int, int]:
    """The claims that stayed in the store longer than TTL + allowance after their holder's
    attempt ended, longest first, as entries; how many there are; and how many more did so across
    a step of the store's clock (not counted: the store's clock, not the lease, kept them)."""
    ends = HolderEnds(m)
    steps = clock_steps(m, ttl_s + allowance_s(ttl_s))
    stepped = 0
    bound_ns = (ttl_s + allowance_s(ttl_s)) * 1e9
    kept = {id(k.claim) for k in (m.model.kept_alive if m.model is not None else [])}
    found: list[tuple[int, ClaimSpan, int]] = []
    for s in spans(m):
        t = ends.time(s.claim.owner)
        if t is None or s.ended_ns <= t:
            continue
        stayed = s.ended_ns - t
        if stayed > bound_ns:
            if any(s.created_ns <= b and a <= s.ended_ns for a, b in steps):
                stepped += 1
                continue
            found.append((stayed, s, t))
    found.sort(key=lambda x: -x[0])
    out = []
    for stayed, s, t in found[:EXAMPLES]:
        c = s.claim
        end = ends.get(c.owner)
        assert end is not None, "a claim is found only once its holder's attempt ended"
        words = end[1]
        out.append({"attempt": c.owner, "key": c.key, "holder_ended_s": round(t / 1e9, 3), "how": words,
                    "stayed_s": round(stayed / 1e9, 3), "still_held": s.still_held,
                    "no_expiry": c.expires_ms is None, "kept_alive": id(c) in kept,
                    "created_s": round(s.created_ns / 1e9, 3), "fate": c.fate, "line": c.line,
                    "cause": cause(c, id(c) in kept)})
    return out, len(found), stepped


def cause(claim, kept: bool) -> str:
    if claim.expires_ms is None:
        return "it was written without an expiry"
    if kept:
        return "other attempts' commands kept lengthening its expiry"
    return "its expiry was set further out than the TTL"


def no_expiry(m) -> tuple[list[dict], int]:
    """Claims that had no expiry when they ended (or when the audit ended)."""
    found = [s for s in spans(m) if s.claim.expires_ms is None]
    return [{"attempt": s.claim.owner, "key": s.claim.key, "created_s": round(s.created_ns / 1e9, 3),
             "fate": s.claim.fate, "line": s.claim.line} for s in found[:EXAMPLES]], len(found)


def holds(m) -> list[ClaimSpan]:
    """Every claim, longest held first (creation to end, renewals included)."""
    return sorted(spans(m), key=lambda s: -(s.ended_ns - s.created_ns))


def recovery(m, ttl_s: float) -> dict:
    """After a holder died (``kill:holder``) or hung (``hang:holder``): from then until its claim
    left the store — the key free for another attempt to claim."""
    faults = m.faults()
    deaths = [(t, a, how) for a, (t, how) in kills(faults).items()]
    all_spans = spans(m)
    for slot, start, _ in hangs(faults):
        for s in all_spans:
            if s.claim.owner.startswith(slot + ".") and s.created_ns <= start < s.ended_ns:
                deaths.append((start, s.claim.owner, f"its job hung ({slot})"))
    events = []
    for t, attempt, how in deaths:
        for s in all_spans:
            if s.claim.owner == attempt and s.created_ns <= t < s.ended_ns:
                events.append({"attempt": attempt, "key": s.claim.key, "how": how, "at_s": round(t / 1e9, 3),
                               "recovery_s": round((s.ended_ns - t) / 1e9, 3), "recovered": not s.still_held})
    events.sort(key=lambda e: e["at_s"])
    times = [e["recovery_s"] for e in events]
    bound = ttl_s + allowance_s(ttl_s)
    return {"count": len(events), "median_s": round(statistics.median(times), 3) if times else None,
            "max_s": max(times) if times else None, "ttl_s": ttl_s, "bound_s": round(bound, 3),
            "within_bound": all(t <= bound and e["recovered"] for t, e in zip(times, events)) if times else None,
            "events": events[:EXAMPLES]}
