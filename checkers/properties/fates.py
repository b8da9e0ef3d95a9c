"""Claim fates: every claim followed to its end (`claims.FATES`). Audit lines attributed against
the history's sent lists, a claim that could not be followed, a key lost after an eviction leave
the verdict unknown. Without the audit no claim is known."""
from __future__ import annotations

from ..claims import FATES
from ..measure import Measured
from ..result import Part

ORDER = 40
FIELDS = {"claims": {fate: 0 for fate in FATES}, "expiry_edge": {"count": 0, "examples": []}}
CERTAINTY = ("claims",)


def check(m: Measured, found) -> Part:
    if m.model is None:
        return Part({"claims": {fate: 0 for fate in FATES}},
                    certainty={"claims": "unknown (needs the audit)"})
    sim = m.model
    counts = sim.counts()
    part = Part({"claims": counts, "expiry_edge": {"count": len(sim.edges), "examples": sim.edges[:5]}},
                certainty={"claims": "certain (store audit)"})
    if m.joined.mismatches:
        part.doubts.append(f"{m.joined.mismatches} audit line(s) name a different command than the history's "
                           "sent lists, so attribution to attempts cannot be trusted")
    if counts["unknown"]:
        part.doubts.append(f"{counts['unknown']} claim(s) could not be followed to their end "
                           "(removed by an unattributed command, owner unknown, or live across a gap)")
    if sim.lost_keys:
        part.doubts.append(f"{sim.lost_keys} key(s) could not be followed after an eviction fault: a create "
                           "with an unknown outcome may have found the key evicted")
    return part
