"""Several store nodes (``--topology redlock``): each node's audit, joined and modelled on its own.

Every node has its own audit (``audit-nodeK.log``) and clock samples (``store-clock-nodeK.jsonl``).
A worker's connection to a node is named ``<conn>@nodeK``, so a call's ``sent`` list says which
node each command went to. Node K is measured as a store of its own: the history with every
``sent`` list cut down to node K's entries, joined with node K's audit and replayed through the
store model with node K's clock (``measure.measure``). What is kept of it is its claims: a
claim of a multi-node attempt is then the set of (node, key) creations the attempt made.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from protocol import FAIL, INFO, INVOKE, LATE_SENT, OK, node_audit, node_clock, node_of_conn

from .audit import AuditStream
from .claims import Claim, ForeignRelease
from .clock import StoreClock
from .measure import measure
from .rundir import load_store_clock


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

    def of(self, attempt: str) -> list[Claim]:
        return [c for c in self.claims if c.owner == attempt]


def audit_summary(nodes: list[NodeMeasure], expected: list[str]) -> dict:
    """results.json's ``audit`` for a run of several nodes: complete only when every node's is.
    ``nodes`` has an entry per node of the run (``expected``, in node order): whether its audit
    was read and is complete, its command lines and the claims created there (None without an
    audit) — what the terminal summary's line per node shows (``node_report``)."""
    measured = {n.name: n for n in nodes}
    per_node = {}
    for name in expected or [n.name for n in nodes]:
        n = measured.get(name)
        per_node[name] = ({"recorded": True, "complete": n.complete, "lines": n.lines, "claims": len(n.claims)}
                          if n is not None else {"recorded": False, "complete": False, "lines": 0, "claims": None})
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


def only_node(events, node: str) -> list[dict]:
    """The history as one node saw it: every ``sent`` list cut down to the commands sent to
    ``node``, and every lease call's outcome unknown (``info``). A multi-node call's result is
    not any one node's: an acquire that won a majority may have found the key taken here, one
    that lost may have created it here — so the store model must judge each node's commands by
    that node's audit alone, never by the call's result.

    A ``late_sent`` event (a command the lease's own thread sent after its call returned,
    ``harness.connection``) joins the ``sent`` list of the call that sent it, named by attempt,
    ``f`` and the time of its invocation (``invoked``) — also when it was written just before
    that call's completion (sent between the call's drain and its completion being written)."""
    out: list[dict] = []
    invoked: dict[tuple, int] = {}     # (attempt, f) -> its open invocation's time
    done: dict[tuple, int] = {}        # (attempt, f, invoked) -> position of its completion in `out`
    early: dict[tuple, list] = {}      # late commands whose call's completion is still to come
    for e in events:
        kind, call = e.get("type"), (e.get("attempt"), e.get("f"))
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
            e = dict(e, sent=mine)
            if kind in (OK, FAIL, INFO):
                which = call + (invoked.pop(call, None),)
                e["sent"] = mine + early.pop(which, [])
                done[which] = len(out)
            if kind in (OK, FAIL):
                e["type"] = INFO
                e.pop("value", None)
        out.append(e)
    return out


def measure_nodes(events, audits: dict, config: dict) -> list[NodeMeasure]:
    """One `NodeMeasure` per node with an audit (`audits`: `open_node_audits`'s answer)."""
    events = list(events)
    out = []
    for name, (audit, samples) in audits.items():
        if audit is None:
            continue
        m = measure(only_node(events, name), audit, config, samples)
        out.append(NodeMeasure(name, m.model.claims, m.model.foreign, m.clock, m.audit.complete,
                               m.audit.lines, m.joined.unattributed, [f"{name}: {p}" for p in m.problems],
                               [f"{name}: {d}" for d in m.joined.disagreements + m.model.disagreements]))
    return out
