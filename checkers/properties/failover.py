"""Failover (``--topology replicated``): who was promoted when, and the claims acknowledged by the
primary that the promoted replica never had (``lost_in_failover``, `leasecheck.checkers.measures.failover` measures
them). Their count is a claim fate (results.json ``claims``, the `fates` property) and those
another attempt then won while their holder still held them are early losses with cause
``failover`` (``early_loss``, judged by the `early_loss` property with a witness of one column per
node); this field keeps the failovers and the lost claims themselves. An audit missing or cut
short on a node, or a failover that promoted nobody, leaves the verdict unknown. Silent on other
topologies (the field is left out of results.json)."""
from __future__ import annotations

from leasecheck.checkers.model import replicated
from leasecheck.checkers.measures.measure import Measured
from leasecheck.checkers.result import OMITTED, Part

ORDER = 62
FIELDS = {"failover": OMITTED}
EXAMPLES = 5


applies = replicated.applies   # only a replicated run whose nodes' audits were measured


def check(m: Measured, found) -> Part:
    fo = replicated.measured(m)
    if fo is None:
        return Part()
    fos, lost = fo.failovers, fo.lost
    field = {"failovers": [{"fault": f.n, "primary_before": f.old, "promoted": f.new,
                            "stopped_s": round(f.stopped / 1e9, 3),
                            "promoted_s": round(f.promoted / 1e9, 3) if f.promoted is not None else None}
                           for f in fos],
             "examples": [x.to_dict() for x in lost[:EXAMPLES]]}
    part = Part({"failover": field})
    quiet = [x for x in lost if x.newcomer is None]
    if quiet:
        part.notes.append(f"{len(quiet)} acknowledged claim(s) lost in failover, none of them then won by another "
                          "attempt while its holder held it")
    if not fos:
        part.notes.append("no failover happened: every claim stayed on the first primary")
    elif not lost:
        part.notes.append(f"{len(fos)} failover(s), no acknowledged claim lost: the promoted node had every live claim")
    names = [n.get("name") for n in m.config.get("store_nodes") or []]
    measured = [n.name for n in m.nodes]
    missing = [x for x in names if x not in measured]
    if missing:
        part.doubts.append(f"no audit for {', '.join(missing)}: what happened there is unknown")
    broken = [n.name for n in m.nodes if not n.complete]
    if broken:
        part.doubts.append(f"the audit of {', '.join(broken)} is incomplete: a claim lost in failover may be "
                           "missed there")
    unpromoted = [f.n for f in fos if f.new is None]
    if unpromoted:
        part.doubts.append(f"failover fault(s) {', '.join(map(str, unpromoted))} promoted no replica: nothing failed over")
    return part
