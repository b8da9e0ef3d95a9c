"""Failover (``--topology replicated``): a claim acknowledged by the primary that the promoted
replica never had is ``lost_in_failover``; when another attempt then won the key while its holder
still held it, that is an early loss with cause ``failover`` and fails the run, with a witness
timeline of one column per node (`checkers.failover` measures it). Silent on other topologies
(the field is left out of results.json)."""
from __future__ import annotations

from ..failover import failovers, lost_in_failover, witness_markdown
from ..measure import Measured
from ..result import OMITTED, Part

ORDER = 62
FIELDS = {"failover": OMITTED}
EXAMPLES = 5


def applies(m: Measured) -> bool:
    """Only a replicated run whose nodes' audits were measured."""
    return m.nodes is not None and m.config.get("topology") == "replicated"


def check(m: Measured, found) -> Part:
    if not applies(m):
        return Part()
    fos = failovers(m.faults() or [])
    names = [n.get("name") for n in m.config.get("store_nodes") or []]
    lost = lost_in_failover(m.nodes, fos, m.events, float(m.config.get("ttl_ms") or 0))
    early = [x for x in lost if x.newcomer is not None]
    field = {"failovers": [{"fault": f.n, "primary_before": f.old, "promoted": f.new,
                            "stopped_s": round(f.stopped / 1e9, 3),
                            "promoted_s": round(f.promoted / 1e9, 3) if f.promoted is not None else None}
                           for f in fos],
             "lost_in_failover": len(lost), "early_loss": {"count": len(early), "by_cause": {"failover": len(early)}},
             "examples": [x.to_dict() for x in lost[:EXAMPLES]],
             # claims each node's audit attributes to an attempt (a replica's copies have no owner)
             "claims_per_node": {n.name: sum(1 for c in n.claims if c.owner) for n in m.nodes}}
    part = Part({"failover": field})
    if early:
        x = early[0]
        fo = next(f for f in fos if f.n == x.failover)
        part.failures.append(
            f"{len(early)} claim(s) lost in failover while another attempt then held the key (early loss, "
            f"cause failover): the first is {x.attempt}'s on {x.key}, acknowledged by {x.node} at "
            f"{x.created / 1e9:.3f} s; {x.node} was stopped at {fo.stopped / 1e9:.3f} s before any replica had it, "
            f"{x.promoted} was promoted at {fo.promoted / 1e9:.3f} s without it, and {x.newcomer.attempt} won the "
            f"key there at {x.newcomer.start / 1e9:.3f} s, before {x.attempt}'s promise ended at "
            f"{x.hold.end / 1e9:.3f} s")
        part.witness.append({"kind": "failover", "markdown": witness_markdown(x, fo, names)})
    elif lost:
        part.notes.append(f"{len(lost)} acknowledged claim(s) lost in failover, none of them then won by another "
                          "attempt while its holder held it")
    if not fos:
        part.notes.append("no failover happened: every claim stayed on the first primary")
    elif not lost:
        part.notes.append(f"{len(fos)} failover(s), no acknowledged claim lost: the promoted node had every live claim")
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
