"""Evidence: a verdict needs claims to judge. No claim seen in the store, or an acquire that
reported a win the audit shows created no claim (a lease whose claim the store never held
protects nothing), leaves the verdict unknown. Needs the audit."""
from __future__ import annotations

from leasecheck.checkers.measures.measure import Measured
from leasecheck.checkers.result import Part

ORDER = 30
FIELDS = {"claims_seen": None}


def check(m: Measured, found) -> Part:
    if m.model is None:
        return Part({"claims_seen": None})
    sim = m.model
    part = Part({"claims_seen": claims_seen(sim.claims)})
    if sim.unmatched_wins:
        part.doubts.append(f"{sim.unmatched_wins} acquire(s) reported a win that the store's audit does not "
                           f"show as a claim (first: {sim.unmatched_first[0]}): there is no evidence these "
                           "claims existed, so nothing can be said about them")
    if not sim.claims:
        part.doubts.append("no claim was seen in the store: no lease call created a key in the audit, so "
                           "there is nothing to judge (does the lease write to this store, and does its "
                           "acquire ever win?)")
    return part


def claims_seen(claims) -> dict:
    """How many claims the audit showed, on how many keys (a hash field counts as a key of its
    own, shown as `key[field]`), and a few of those keys."""
    keys: dict[str, None] = {}
    for c in claims:
        keys.setdefault(c.name, None)
    return {"count": len(claims), "keys": len(keys), "examples": list(keys)[:3]}
