"""The longest hold (liveness): how long a claim stayed held, from its create to its end
(renewals included), always reported; with ``--max-hold`` a claim held longer fails the run — the
way a team says "no job may keep the key longer than N". Needs the audit.
"""
from __future__ import annotations

import statistics

from leasecheck.checkers.measures.liveness import holds
from leasecheck.checkers.measures.measure import Measured
from leasecheck.checkers.result import Part

ORDER = 99
KIND = "liveness"
FIELDS = {"holds": None}


def check(m: Measured, found) -> Part:
    if m.model is None:
        return Part()
    limit = m.config.get("max_hold_s")
    spans = holds(m)
    times = [(s.ended_ns - s.created_ns) / 1e9 for s in spans]
    over = [t for t in times if limit is not None and t > limit]
    longest = spans[0] if spans else None
    part = Part({"holds": {
        "count": len(spans), "median_s": round(statistics.median(times), 6) if times else None,
        "longest_s": round(times[0], 3) if times else None,
        "longest": {"attempt": longest.claim.owner, "key": longest.claim.key,
                    "created_s": round(longest.created_ns / 1e9, 3), "still_held": longest.still_held}
        if longest else None,
        "max_hold_s": limit, "over_max_hold": len(over)}})
    if over:
        part.failures.append(f"{len(over)} claim(s) held longer than --max-hold {limit:g} s: the longest, attempt "
                             f"{longest.claim.owner}'s on {longest.claim.key}, was held {times[0]:.3f} s "
                             "(renewals included)")
    elif times:
        part.notes.append(f"the longest hold was {times[0]:.3f} s (attempt {longest.claim.owner})"
                          + (f", within --max-hold {limit:g} s" if limit is not None else ""))
    return part
