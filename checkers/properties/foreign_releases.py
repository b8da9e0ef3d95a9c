"""Foreign releases: no attempt may remove, overwrite or shorten another attempt's claim.

With the audit, the store model names every foreign release (`claims`), the first one (and, when
asked, every one) becomes a witness, and the walk-ins are counted; a lease call whose commands
are missing from the audit could hide one (unknown). Without the audit, only what the history
alone proves counts (`history_only`), and nothing else can be said (unknown).
"""
from __future__ import annotations

from leasecheck.rundir import node_audit

from leasecheck.checkers.measures.measure import Measured
from leasecheck.checkers.result import OMITTED, Part
from leasecheck.rundir import AUDIT
from leasecheck.checkers.present.witness import build_witness, walk_ins
from leasecheck.events import INFO

FOREIGN_LISTED = 1000   # results.json lists this many foreign releases, enough to draw; the count is exact

ORDER = 10
FIELDS = {"foreign_releases": 0, "walk_ins": 0, "witnesses": OMITTED,
          # each foreign release (the first FOREIGN_LISTED): who removed whose claim, when (the report's lanes)
          "foreign_releases_first": []}
CERTAINTY = ("foreign_releases",)
SCHEMAS = {"foreign_releases_first": {"type": "array", "items": {
    "type": "object",
    "required": ["attempt", "victim", "key", "field", "command", "time_s", "line", "victim_job_running"],
    "properties": {
        "attempt": {"type": ["string", "null"], "description": "the remover's attempt"},
        "victim": {"type": ["string", "null"], "description": "the attempt whose live claim it ended"},
        "key": {"type": "string", "description": "the claim's key (a hash's key for a field claim)"},
        "field": {"type": ["string", "null"], "description": "the hash field of a field claim, else null"},
        "command": {"type": "string", "description": "DEL, or EVAL: del for a script's command"},
        "time_s": {"type": "number", "description": "when, on the history clock"},
        "line": {"type": "integer", "description": "its line in the audit (the node's, with node)"},
        "victim_job_running": {"type": "boolean",
                               "description": "the victim's job had started and not ended at that moment"},
        "node": {"type": "string", "description": "the node, in a replicated run"}}}}}


def check(m: Measured, found) -> Part:
    if m.model is None and m.nodes is not None:
        return _per_node(m)
    if m.model is None:
        return _history_only(m)
    sim, jobs, clock = m.model, m.jobs, m.clock
    running = [victim_job_running(fr, jobs, clock) for fr in sim.foreign]
    listed = [{"attempt": fr.remover, "victim": fr.victim.owner, "key": fr.victim.key, "field": fr.victim.field,
               "command": fr.command, "time_s": round(clock.to_history_ns(fr.time) / 1e9, 3), "line": fr.line,
               "victim_job_running": r}
              for fr, r in zip(sim.foreign[:FOREIGN_LISTED], running)]
    # The first witness: the first foreign release that freed a claim whose job was still running
    # (the one that let a job run twice), or, when none did, the first.
    first = next((i for i, r in enumerate(running) if r), 0)
    part = Part({"foreign_releases": len(sim.foreign), "foreign_releases_first": listed,
                 "walk_ins": walk_ins(sim, jobs, clock)},
                certainty={"foreign_releases": "certain (store audit)"})
    windows = m.windows()
    witness = build_witness(sim, jobs, clock, which=first, faults=windows)
    if witness is not None:
        part.witness.append(witness.to_dict() | {"markdown": witness.to_markdown()})
    if m.all_witnesses and len(sim.foreign) > 1:
        more = [build_witness(sim, jobs, clock, which=i, faults=windows) for i in range(len(sim.foreign))
                if i != first]
        part.fields["witnesses"] = [w.to_dict() | {"markdown": w.to_markdown()} for w in more if w]
    if sim.foreign:
        fr = sim.foreign[first]
        n_running = sum(bool(r) for r in running)
        part.failures.append(
            f"{len(sim.foreign)} foreign release(s), {n_running} of a claim whose job was still running: "
            f"the first{' such' if running[first] else ''} is attempt {fr.remover}'s "
            f"{fr.command} ({AUDIT} line {fr.line}, {clock.to_history_ns(fr.time) / 1e9:.3f} s), "
            f"which {fr.how} the claim of attempt {fr.victim.owner} on {fr.victim.name}")
    part.doubts += _uncovered(m)
    part.notes.append(f"no foreign release among {sum(sim.counts().values())} claim(s) in a complete audit")
    return part


def victim_job_running(fr, jobs, clock) -> bool:
    """Was the victim's job running (started, not ended) when the command took its claim away?"""
    job = jobs.get(fr.victim.owner) if fr.victim.owner else None
    return job is not None and job.running_at(clock.to_history_ns(fr.time))


def _uncovered(m: Measured) -> list[str]:
    """Lease calls whose commands the audit does not (fully) have: a foreign release could hide there."""
    complete = m.audit.complete
    by_index = {op.index: op for op in m.remaining}
    uncovered = [by_index[i] for i in m.joined.uncovered(m.remaining, complete)]
    if not uncovered:
        return []
    info = sum(op.type == INFO for op in uncovered)
    never = sum(op.type is None for op in uncovered)
    example = f"e.g. {uncovered[0].attempt} {uncovered[0].f}"
    if complete:
        return [f"{len(uncovered)} lease call(s) that got a reply sent commands the complete "
                f"audit does not have ({example}): a foreign release could be hidden there"]
    return [f"the audit is incomplete (cut short or with gaps) and {len(uncovered)} lease "
            f"call(s) ({info} with unknown outcome, {never} never completed; {example}) "
            "are not fully in it: a foreign release could be hidden there"]


def _per_node(m: Measured) -> Part:
    """Several store nodes: each node's audit names its foreign releases. Independent masters
    (redlock): `mutual_exclusion` judges them with the holds; here only their count. A replicated
    run's nodes are one store over time (the primary of the moment), so each node's foreign
    releases are judged here as on one store, with each one listed, its node named, and the first
    one's witness — e.g. after a failover, another attempt's release removing the holder's claim
    as the promoted node had it (its copy, whose owner is the attempt whose create wrote it)."""
    n = sum(len(node.foreign) for node in m.nodes)
    part = Part({"foreign_releases": n}, certainty={"foreign_releases": "certain (every node's audit)"})
    if m.config.get("topology") != "replicated":
        return part
    found = sorted(((node.clock.to_history_ns(fr.time), node, fr) for node in m.nodes for fr in node.foreign),
                   key=lambda x: x[0])
    part.fields["foreign_releases_first"] = [
        {"attempt": fr.remover, "victim": fr.victim.owner, "key": fr.victim.key, "field": fr.victim.field,
         "command": fr.command, "time_s": round(t / 1e9, 3), "line": fr.line, "node": node.name,
         "victim_job_running": victim_job_running(fr, m.jobs, node.clock)} for t, node, fr in found[:FOREIGN_LISTED]]
    part.fields["walk_ins"] = sum(walk_ins(node.model, m.jobs, node.clock) for node in m.nodes if node.model)
    if not found:
        return part
    t, node, fr = found[0]
    audit = node_audit(node.name)
    part.failures.append(
        f"{n} foreign release(s): the first is attempt {fr.remover}'s {fr.command} on {node.name} "
        f"({audit} line {fr.line}, {t / 1e9:.3f} s), which {fr.how} the claim of attempt "
        f"{fr.victim.owner} on {fr.victim.name}" + (" (its copy there, replicated from the primary)"
                                                     if fr.victim.copy else ""))
    if node.model is not None:
        witness = build_witness(node.model, m.jobs, node.clock, which=node.foreign.index(fr), faults=m.windows(),
                                audit=audit)
        if witness is not None:
            if fr.victim.copy:
                witness.summary += (f" On {node.name} the claim of {fr.victim.owner} was its copy, replicated from "
                                    "the primary where its acquire created it; the row of its create shows when the "
                                    "copy arrived.")
            part.witness.append(witness.to_dict() | {"markdown": witness.to_markdown()})
    return part


def _history_only(m: Measured) -> Part:
    """No audit: foreign releases only where the history proves them; say what is certain."""
    proven = m.digest.proof.proven(m.digest.faults.starts)
    part = Part({"foreign_releases": len(proven) if proven else 0},
                certainty={"foreign_releases": "proven from the history" if proven else "unknown"})
    if proven:
        first = proven[0]
        part.failures.append(
            f"{len(proven)} foreign release(s) proven from the history alone: the first is "
            f"{first.attempt}'s release at {first.invoke_time / 1e9:.3f} s, which deleted something "
            "more than the lease after its own claim was made, so not its own claim")
    else:
        part.doubts.append(f"there is no {AUDIT}, and the history alone proves no foreign release "
                           "(a release close to its deadline cannot be told from one of its own claim)")
    return part
