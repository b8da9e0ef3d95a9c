"""Several store nodes (``--topology redlock``): each node's audit, joined and modelled on its own.

Every node has its own audit (``audit-nodeK.log``) and clock samples (``store-clock-nodeK.jsonl``).
A worker's connection to a node is named ``<conn>@nodeK``, so a call's ``sent`` list says which
node each command went to. Node K is measured as a store of its own: the history with every
``sent`` list cut down to node K's entries, joined with node K's audit and replayed through the
store model with node K's clock (``measure.measure``). What is kept of it is its claims: a
claim of a multi-node attempt is then the set of (node, key) creations the attempt made.

Under ``--topology replicated`` a replica's audit also shows the commands it applies from its
primary: each claim they create is a *copy* of the primary's claim with the same key and value.
A copy belongs to the attempt whose create on a primary wrote that value (`CopyOwners`), so once
the replica is promoted its model knows whose claim each copy is — another attempt's release of
it there is a foreign release. That takes two passes: every node's own claims first, then each
node whose audit holds copies once more with their owners.
"""
from __future__ import annotations

import bisect
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from leasecheck.protocol import node_of_conn
from leasecheck.rundir import node_audit, node_clock

from leasecheck.checkers.read.audit import AuditStream
from leasecheck.checkers.model.claims import Claim, ClaimsResult, ForeignRelease
from leasecheck.checkers.model.clock import StoreClock
from leasecheck.checkers.measures.measure import measure, replication_addresses
from leasecheck.checkers.read.rundir import load_store_clock
from leasecheck.events import FAIL, INFO, INVOKE, LATE_SENT, OK, TYPE


@dataclass
class NodeMeasure:
    """What node `name`'s audit showed."""
    name: str
    claims: list[Claim]
    foreign: list[ForeignRelease]
    clock: StoreClock
    complete: bool
    lines: int = 0           # command lines in its audit
    unattributed: int = 0    # command lines no lease call sent (the harness's own, markers aside)
    problems: list[str] = field(default_factory=list)
    disagreements: list[str] = field(default_factory=list)   # the join's and the model's, as on one store
    model: ClaimsResult | None = None   # the store model's whole result (a witness reads it)

    def of(self, attempt: str) -> list[Claim]:
        return [c for c in self.claims if c.owner == attempt]

    @property
    def copies(self) -> int:
        """Claims that are a replica's copies of its primary's (``--topology replicated``)."""
        return sum(c.copy for c in self.claims)


# A copy and its original are seen on two nodes' clocks, each mapped to the history's: a copy is
# taken as made by a create no later than this after it.
COPY_SLACK_NS = 50_000_000


class CopyOwners:
    """Whose claim a replica's copy is: the attempt whose own create (not a copy) of the same key
    with the same value, on any node, came last before the copy — values are fresh per attempt,
    so there is one such create unless a lease reuses its tokens."""

    def __init__(self, nodes: list["NodeMeasure"]) -> None:
        by: dict[tuple, list[tuple[int, str]]] = defaultdict(list)
        for n in nodes:
            for c in n.claims:
                if c.owner is not None and not c.copy and c.token is not None:
                    by[(c.db, c.key, c.token)].append((n.clock.to_history_ns(c.created), c.owner))
        self.by = {k: sorted(v) for k, v in by.items()}

    def __call__(self, db: int, key: str, token: str, at_ns: int) -> str | None:
        made = self.by.get((db, key, token))
        if not made:
            return None
        i = bisect.bisect_right([t for t, _ in made], at_ns + COPY_SLACK_NS)
        return made[i - 1][1] if i else None


def audit_summary(nodes: list[NodeMeasure], expected: list[str], replicated: bool = False) -> dict:
    """results.json's ``audit`` for a run of several nodes: complete only when every node's is.
    ``nodes`` has an entry per node of the run (``expected``, in node order): whether its audit
    was read and is complete, its command lines and the claims created there (None without an
    audit) — what the terminal summary's line per node shows (``node_report``). In a
    ``replicated`` run, ``copies`` says how many of those claims were copies of a primary's."""
    measured = {n.name: n for n in nodes}
    per_node = {}
    for name in expected or [n.name for n in nodes]:
        n = measured.get(name)
        per_node[name] = ({"recorded": True, "complete": n.complete, "lines": n.lines, "claims": len(n.claims)}
                          if n is not None else {"recorded": False, "complete": False, "lines": 0, "claims": None})
        if replicated:
            per_node[name]["copies"] = n.copies if n is not None else None
    return {"present": bool(nodes), "complete": bool(nodes) and all(x["complete"] for x in per_node.values()),
            "lines": sum(n.lines for n in nodes), "unattributed": sum(n.unattributed for n in nodes),
            "nodes": per_node}


def node_names(config: dict) -> list[str]:
    """The nodes a run recorded in its config (``store_nodes``); [] for a run of one store."""
    return [n["name"] for n in config.get("store_nodes") or [] if isinstance(n, dict) and "name" in n]


def open_node_audits(run_dir, config: dict) -> dict[str, tuple[AuditStream | None, list[dict]]]:
    """Each node's audit (None when missing) and clock samples, by node name."""
    out = {}
    for name in node_names(config):
        path = Path(run_dir) / node_audit(name)
        samples, _ = load_store_clock(run_dir, node_clock(name))
        out[name] = (AuditStream(path, name=node_audit(name)) if path.is_file() else None, samples)
    return out


def only_node(events, node: str, one_endpoint: bool = False) -> list[dict]:
    """The history as one node saw it: every ``sent`` list cut down to the commands sent to
    ``node``, and every lease call's outcome unknown (``info``). A multi-node call's result is
    not any one node's: an acquire that won a majority may have found the key taken here, one
    that lost may have created it here — so the store model must judge each node's commands by
    that node's audit alone, never by the call's result.

    With ``one_endpoint`` (``--topology replicated``: a lease talks to whichever node is primary)
    a call whose every command went to ``node`` keeps its outcome: its result is that node's
    answer, which the store model relies on where the audit alone cannot decide (an expiry's
    edge, an eviction window). A call that reached two nodes (retried after a failover) is
    unknown on both.

    A ``late_sent`` event (a command the lease's own thread sent after its call returned,
    ``leasecheck.harness.record.connection``) joins the ``sent`` list of the call that sent it, named by attempt,
    ``f`` and the time of its invocation (``invoked``) — also when it was written just before
    that call's completion (sent between the call's drain and its completion being written)."""
    out: list[dict] = []
    invoked: dict[tuple, int] = {}     # (attempt, f) -> its open invocation's time
    done: dict[tuple, int] = {}        # (attempt, f, invoked) -> position of its completion in `out`
    early: dict[tuple, list] = {}      # late commands whose call's completion is still to come
    for e in events:
        kind, call = e.get(TYPE), (e.get("attempt"), e.get("f"))
        if kind == INVOKE:
            invoked[call] = e.get("time")
        sent = e.get("sent")
        if sent is not None:
            mine = [s for s in sent if isinstance(s, list) and s and node_of_conn(str(s[0])) == node]
            if kind == LATE_SENT:
                which = call + (e.get("invoked"),)
                if which in done:
                    i = done[which]
                    out[i] = dict(out[i], sent=out[i]["sent"] + mine)
                else:
                    early.setdefault(which, []).extend(mine)
                continue
            here = one_endpoint and bool(mine) and len(mine) == sum(isinstance(x, list) and bool(x) for x in sent)
            e = dict(e, sent=mine)
            if kind in (OK, FAIL, INFO):
                which = call + (invoked.pop(call, None),)
                e["sent"] = mine + early.pop(which, [])
                done[which] = len(out)
            if kind in (OK, FAIL) and not here:
                e[TYPE] = INFO
                e.pop("value", None)
        out.append(e)
    return out


def measure_nodes(events, audits: dict, config: dict) -> list[NodeMeasure]:
    """One `NodeMeasure` per node with an audit (`audits`: `open_node_audits`'s answer); on a
    replicated run, each replica's copies with their owners (a second pass, see above)."""
    events = list(events)
    out = [_measure_node(events, name, audit, samples, config)
           for name, (audit, samples) in audits.items() if audit is not None]
    if not replication_addresses(config) or not any(n.copies for n in out):
        return out
    owners = CopyOwners(out)
    return [_measure_node(events, n.name, audits[n.name][0], audits[n.name][1], config, owners) if n.copies else n
            for n in out]


def _measure_node(events, name: str, audit, samples, config: dict, copy_owner=None) -> NodeMeasure:
    m = measure(only_node(events, name, config.get("topology") == "replicated"), audit, config, samples,
                copy_owner=copy_owner)
    return NodeMeasure(name, m.model.claims, m.model.foreign, m.clock, m.audit.complete,
                       m.audit.lines, m.joined.unattributed, [f"{name}: {p}" for p in m.problems],
                       [f"{name}: {d}" for d in m.joined.disagreements + m.model.disagreements], m.model)
