"""Early loss: a claim the store lost before the lease's deadline while another attempt then ran
the same job breaks the lease's promise and fails the run, whatever `max_overlap` says
(`checkers/measures/early_loss.py` measures it; its timeline joins the witness). In a replicated run the
claims lost in a failover that another attempt then won are early losses with cause ``failover``
(`checkers/measures/failover.py` measures them from each node's audit), told and drawn as a failover; each
node's own claims show the other causes as one store would (a clock jump, an eviction on the
primary)."""
from __future__ import annotations

from leasecheck.checkers.measures import failover
from leasecheck.checkers.model import replicated
from leasecheck.checkers.measures.early_loss import early_losses, witness_markdown
from leasecheck.checkers.measures.measure import Measured
from leasecheck.checkers.result import Part

ORDER = 60
FIELDS = {"early_loss": None}


def check(m: Measured, found) -> Part:
    digest = m.digest
    found_ = early_losses(m.jobs, digest.promises, m.claims, digest.ttl_ms)
    clock_of = {}     # a replicated run: the node (its store clock) of each loss a node showed
    fo = replicated.measured(m)
    if fo is not None:
        found_, clock_of = replicated.node_early_losses(m.nodes, m.jobs, digest.promises, digest.ttl_ms)
        found_.losses = sorted(found_.losses + failover.early_losses(fo.lost, digest.ttl_ms or 0),
                               key=lambda x: x.newcomer_start)
    part = Part({"early_loss": found_.to_dict()})
    if not found_.losses:
        return part
    first = found_.losses[0]
    if first.cause == "failover":
        lost, when = fo.story(first)
        part.failures.append(failover.reason(lost, when, sum(x.cause == "failover" for x in found_.losses)))
        names = [n.get("name") for n in m.config.get("store_nodes") or []]
        part.witness.append({"kind": "failover", "markdown": failover.witness_markdown(lost, when, names)})
        return part
    causes = ", ".join(f"{c.replace('_', ' ')} {n}" for c, n in part.fields["early_loss"]["by_cause"].items() if n)
    part.failures.append(
        f"{len(found_.losses)} claim(s) lost before the lease's deadline while another attempt "
        f"then ran the same job ({causes}): the first is {first.holder}'s, whose job "
        f"{first.job_key} {first.newcomer} started at {first.newcomer_start / 1e9:.3f} s, "
        f"before {first.holder}'s deadline at {first.deadline / 1e9:.3f} s")
    node = clock_of.get(id(first.claim))
    clock = node.clock if node is not None else m.clock
    part.witness.append({"kind": "early_loss", "markdown": witness_markdown(first, clock, m.faults() or [])})
    return part
