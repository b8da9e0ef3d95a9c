"""Split brain (``--topology replicated``): a claim a lease call created on a node that was not the
primary then — the old primary, continued after a failover and still accepting writes until the
Sentinels demote it — by an acquire that returned True, while another holder's claim on the same
key was live on the primary: two live claims on one key, on two nodes that both accept writes (`leasecheck.checkers.measures.split_brain` measures
them from each node's audit and the failover records). Such a claim fails the run, with a
timeline of one column per node; any other claim off the primary (no other holder's claim
overlapped it, or its acquire was not acknowledged) is a note, so that a write off the primary is
never silent. Silent on other topologies (the field is left out)."""
from __future__ import annotations

from leasecheck.checkers.measures import split_brain
from leasecheck.checkers.model import replicated
from leasecheck.checkers.measures.measure import Measured
from leasecheck.checkers.result import OMITTED, Part

ORDER = 63
FIELDS = {"split_brain": OMITTED}
EXAMPLES = 5


applies = replicated.applies   # only a replicated run whose nodes' audits were measured


def check(m: Measured, found) -> Part:
    fo = replicated.measured(m)
    if fo is None:
        return Part()
    held = {h.attempt for h in m.holds}
    off = split_brain.off_primary(m.nodes, fo.failovers, held)
    brains = [x for x in off if x.rival is not None]
    part = Part({"split_brain": {"count": len(brains), "off_primary": len(off),
                                 "examples": [x.to_dict() for x in off[:EXAMPLES]]}})
    if brains:
        part.failures.append(split_brain.reason(brains[0], len(brains)))
        names = [n.get("name") for n in m.config.get("store_nodes") or []]
        part.witness.append({"kind": "split_brain", "markdown": split_brain.witness_markdown(brains[0], names)})
    quiet = [x for x in off if x.rival is None]
    if quiet:
        part.notes.append(split_brain.note(quiet))
    return part
