"""Recovery time (liveness, a measurement): after a holder died (``kill:holder``) or hung
(``hang:holder``), how long until its claim left the store, so another attempt could claim the key
again — median and maximum per run, against the TTL. Reported, not judged: a claim that never
comes free is a stuck claim (`stuck_claims`), a hold that is too long `max_hold`'s. Needs the audit.
"""
from __future__ import annotations

from leasecheck.checkers.measures.liveness import recovery
from leasecheck.checkers.measures.measure import Measured
from leasecheck.checkers.result import Part

ORDER = 98
KIND = "liveness"
FIELDS = {"recovery": None}


def check(m: Measured, found) -> Part:
    if m.model is None:
        return Part()
    ttl_s = float(m.config.get("ttl_ms") or 0) / 1000
    r = recovery(m, ttl_s)
    part = Part({"recovery": r})
    if r["count"]:
        part.notes.append(f"after {r['count']} holder(s) died or hung, the key came free in {r['median_s']:g} s "
                          f"(median), {r['max_s']:g} s at most, against a TTL of {ttl_s:g} s")
    return part
