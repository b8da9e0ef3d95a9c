"""Claim fates: every claim followed to its end (`claims.FATES`). Audit lines attributed against
the history's sent lists, a claim that could not be followed, a key lost after an eviction leave
the verdict unknown. Without the audit no claim is known. In a replicated run the claims are
those the lease calls created on any node, each followed across failovers to its copy on the
promoted node (`replicated.resolved_claims`; ``lost_in_failover`` when that node never had it)."""
from __future__ import annotations

from leasecheck.checkers.model import replicated
from leasecheck.checkers.model.claims import FATES
from leasecheck.checkers.measures.measure import Measured
from leasecheck.checkers.result import Part

ORDER = 40
FIELDS = {"claims": {fate: 0 for fate in FATES}, "expiry_edge": {"count": 0, "examples": []}}
CERTAINTY = ("claims",)


def check(m: Measured, found) -> Part:
    fo = replicated.measured(m)
    if fo is not None:
        return _replicated(m, fo.fates)
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


def _replicated(m: Measured, counts: dict[str, int]) -> Part:
    """A replicated run: the fates across the nodes (a missing or incomplete node audit is the
    `failover` property's doubt)."""
    names = [n.get("name") for n in m.config.get("store_nodes") or []]
    whole = all(n.complete for n in m.nodes) and {n.name for n in m.nodes} >= set(names)
    part = Part({"claims": counts},
                certainty={"claims": "certain (every node's audit)" if whole else "unknown (a node's audit is missing "
                           "or incomplete)"})
    if counts["unknown"]:
        part.doubts.append(f"{counts['unknown']} claim(s) could not be followed to their end "
                           "(removed by an unattributed command, owner unknown, or live across a gap)")
    return part
