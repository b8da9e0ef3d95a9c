"""The independent checker on a run of several store nodes, from docs/history.md alone
("Attribution: `sent`" on several nodes, "Mutual exclusion across masters", "Claims lost in
failover", "Split brain"). It imports nothing of leasecheck. Each node is checked as a store of
its own (`checker.Checker(run, node=...)`); this module puts the nodes together and returns

    redlock:    {"foreign": n, "foreign_per_node": {node: n}, "claims_per_node": {node: n},
                 "holds": n, "violations": n, "overlap": n, "found_nothing": n}
    replicated: {"foreign": [(remover, victim, node, audit line, victim_job_running), ...],
                 "claims": n, "fates": {fate: n}, "nodes": {node: (claims, copies)},
                 "lost_in_failover": n, "early_loss_failover": n, "split_brain": n,
                 "off_primary": n, "overlap": n, "found_nothing": n}
"""
from __future__ import annotations

from pathlib import Path

from .checker import Checker, _history

SLACK_NS = 50_000_000     # two clocks meet (a copy and its create, a promotion and a create)


# -- holds (Mutual exclusion across masters) ---------------------------------------------------
def holds(events, ttl_ms: float) -> list[dict]:
    """Each attempt whose acquire returned true holds its key from that completion until
    invoke + ttl − drift (drift = 1 % of the ttl + 2 ms) or its release's invocation, whichever
    comes first."""
    drift_ns = round((0.01 * ttl_ms + 2.0) * 1e6)
    invoked, out = {}, {}
    for e in events:
        f, t, a = e.get("f"), e.get("type"), e.get("attempt")
        if f == "acquire" and t == "invoke":
            invoked[a] = e["time"]
        elif f == "acquire" and t == "ok" and e.get("value") is True and a in invoked:
            out[a] = {"attempt": a, "key": e.get("key"), "invoked": invoked[a], "start": e["time"],
                      "end": invoked[a] + round(ttl_ms * 1e6) - drift_ns}
        elif f == "release" and t == "invoke" and a in out and e["time"] < out[a]["end"]:
            out[a]["end"] = e["time"]
    return sorted(out.values(), key=lambda h: (h["start"], h["attempt"]))


def overlaps(a: dict, b: dict) -> bool:
    return a["key"] == b["key"] and a["start"] < b["end"] and b["start"] < a["end"]


# -- failovers ---------------------------------------------------------------------------------
def failovers(events) -> list[dict]:
    """Each failover fault that ended, on the history clock: its stop, promotion, heal and the
    old primary's rejoin (fault_start's time + the measured seconds after it)."""
    starts, out = {}, []
    for e in events:
        if e.get("type") == "fault_start" and e.get("fault") == "failover":
            starts[e.get("n")] = e["time"]
        elif e.get("type") == "fault_end" and e.get("fault") == "failover" and e.get("n") in starts:
            m, t0 = e.get("measured") or {}, starts[e.get("n")]
            if not m.get("primary_before"):
                continue

            def at(x):
                return t0 + round(x * 1e9) if isinstance(x, (int, float)) else None
            healed = at(m.get("healed_after_s"))
            promoted = at(m.get("promoted_after_s")) if m.get("promoted") else None
            out.append({"n": e.get("n"), "old": m["primary_before"], "new": m.get("promoted"), "start": t0,
                        "stopped": at(m.get("stopped_after_s")), "promoted": promoted, "healed": healed,
                        "rejoined": healed + round(m["rejoined_s"] * 1e9)
                        if healed is not None and isinstance(m.get("rejoined_s"), (int, float)) else None})
    return sorted(out, key=lambda f: f["start"])


class Node:
    """One node's claims with their times on the history clock."""

    def __init__(self, name: str, checker: Checker, result: dict):
        self.name, self.checker, self.result = name, checker, result
        self.complete = checker.complete
        for c in checker.claims:
            c["created_ns"] = checker.clock.to_ns(c["created"])
            c["ended_ns"] = checker.clock.to_ns(c["ended"]) if c["ended"] is not None else None
        self.claims = checker.claims

    def live_at(self, c, t) -> bool:
        return c["created_ns"] <= t and (c["ended_ns"] is None or c["ended_ns"] > t)

    def copy_of(self, c, by_ns) -> dict | None:
        """The last copy here of `c` (same key, same value) made no later than `by_ns` + slack."""
        found = [x for x in self.claims if x["copy"] and x["db"] == c["db"] and x["obj"] == c["obj"]
                 and x["token"] == c["token"] and x["created_ns"] <= by_ns + SLACK_NS]
        return found[-1] if found else None


def _run_node(run: Path, name: str, events, one_endpoint, replicated_from, copy_owner=None) -> Node:
    ch = Checker(run, node=name, one_endpoint=one_endpoint, replicated_from=replicated_from,
                 copy_owner=copy_owner, events=events)
    return Node(name, ch, ch.run(run))


def _copy_owners(nodes: list[Node]):
    """A copy's owner: the attempt whose own create (not a copy) of that key with that value, on
    any node, came last before it (within the slack)."""
    made: dict = {}
    for n in nodes:
        for c in n.claims:
            if not c["copy"] and c["owner"] is not None and c["token"] is not None:
                made.setdefault((c["db"], c["obj"], c["token"]), []).append((c["created_ns"], c["owner"]))

    def owner(db, obj, token, at_ns):
        before = [o for t, o in sorted(made.get((db, obj, token), [])) if t <= at_ns + SLACK_NS]
        return before[-1] if before else None
    return owner


def check_nodes(run: Path) -> dict:
    whole = Checker(run)            # the history alone: overlap, releases that found nothing
    events = whole.events
    config = whole.config
    names = [n["name"] for n in config["store_nodes"]]
    present = [x for x in names if (run / f"audit-{x}.log").exists()]
    replicated = config.get("topology") == "replicated"
    peers = frozenset(f"127.0.0.1:{n['peer_port']}" for n in config["store_nodes"] if n.get("peer_port"))
    nodes = [_run_node(run, x, events, replicated, peers) for x in present]
    ttl_ms = float(config.get("ttl_ms") or 0)
    hs = holds(events, ttl_ms)
    common = {"overlap": whole.overlap(), "found_nothing": whole.found_nothing()}
    if not replicated:
        bad = sum(overlaps(a, b) for i, b in enumerate(hs) for a in hs[:i])
        return {"foreign": sum(len(n.result["foreign"]) for n in nodes),
                "foreign_per_node": {n.name: len(n.result["foreign"]) for n in nodes},
                "claims_per_node": {n.name: n.result["claims"] for n in nodes},
                "holds": len(hs), "violations": bad, **common}
    if any(c["copy"] for n in nodes for c in n.claims):
        owner = _copy_owners(nodes)
        nodes = [_run_node(run, n.name, events, True, peers, owner)
                 if any(c["copy"] for c in n.claims) else n for n in nodes]
    fos = failovers(events)
    lost, early = lost_in_failover(nodes, fos, hs)
    fates = resolved_fates(nodes, fos, lost)
    split, off = split_brain(nodes, fos, {h["attempt"] for h in hs})
    # in history-time order across the nodes (equal times: in node order, then audit order)
    foreign = sorted(((at, (r, v, n.name, line, running))
                      for n in nodes for at, (r, v, line, running) in zip(n.checker.foreign_at, n.result["foreign"])),
                     key=lambda x: x[0])
    return {"foreign": [x for _, x in foreign], "claims": sum(fates.values()),
            "fates": {k: v for k, v in fates.items() if v},
            "nodes": {n.name: (n.result["claims"], sum(c["copy"] for c in n.claims)) for n in nodes},
            "lost_in_failover": fates.get("lost_in_failover", 0), "early_loss_failover": early,
            "split_brain": split, "off_primary": off, **common}


def lost_in_failover(nodes: list[Node], fos: list[dict], hs: list[dict]) -> tuple[set, int]:
    """The claims (node, claim id) lost in a failover — its attempt's acquire returned true, it
    was live on the old primary at the stop, and the promoted node had no copy of it by the
    promotion — and how many of them another attempt's hold, begun at or after the stop,
    overlapped (early losses, cause failover)."""
    by = {n.name: n for n in nodes}
    held = {h["attempt"]: h for h in hs}
    lost, early = {}, 0
    for fo in fos:
        old, new = by.get(fo["old"]), by.get(fo["new"] or "")
        if old is None or new is None or fo["promoted"] is None or not new.complete:
            continue
        for c in old.claims:
            if c["owner"] not in held or not old.live_at(c, fo["stopped"]) or new.copy_of(c, fo["promoted"]):
                continue
            lost[(old.name, id(c))] = fo["promoted"]
            h = held[c["owner"]]
            early += any(o["attempt"] != c["owner"] and o["start"] >= fo["stopped"] and overlaps(h, o) for o in hs)
    return lost, early


def resolved_fates(nodes: list[Node], fos: list[dict], lost: dict) -> dict:
    """Every claim a lease call created (copies are not claims of their own), once: a claim
    live on its node when that node was stopped in a failover has its copy's fate on the
    promoted node (followed on), `lost_in_failover` when it was lost there, `unknown` when the
    promoted node's audit is missing or incomplete."""
    by = {n.name: n for n in nodes}
    order = [f for f in fos if f["promoted"] is not None]

    def fate(c, node, after):
        if (node.name, id(c)) in lost:
            return "lost_in_failover"
        for fo in order:
            if fo["old"] != node.name or (after is not None and fo["start"] <= after) \
                    or not node.live_at(c, fo["stopped"]):
                continue
            new = by.get(fo["new"])
            if new is None or not new.complete:
                return "unknown"
            copy = new.copy_of(c, fo["promoted"])
            if copy is not None:
                return fate(copy, new, fo["start"])
            break
        return c["fate"] or "unknown"
    out: dict = {}
    for n in nodes:
        for c in n.claims:
            if not c["copy"]:
                f = fate(c, n, None)
                out[f] = out.get(f, 0) + 1
    return out


def split_brain(nodes: list[Node], fos: list[dict], held: set) -> tuple[int, int]:
    """(split brains, off-primary claims): a claim a lease call created on a node that was not
    the primary then; a split brain when its acquire returned true and another attempt whose
    acquire returned true had a claim on the key live on the primary of that moment, while that
    node was the primary and the off-primary claim lived."""
    if not fos:
        return 0, 0
    reigns = [{"node": fos[0]["old"], "start": 0, "end": None}]
    for fo in fos:
        if fo["new"] is None or fo["promoted"] is None:
            continue
        cur = next((r for r in reversed(reigns) if r["node"] == fo["old"] and r["end"] is None), None)
        if cur is not None:
            cur["end"] = fo["stopped"]
        reigns.append({"node": fo["new"], "start": fo["promoted"], "end": None})

    def primary_at(t):
        for r in reigns:
            if r["start"] <= t and (r["end"] is None or t < r["end"]):
                return r["node"]
        return next((r["node"] for r in reigns if r["start"] > t), None)

    def was_primary(node, t):
        return any(r["node"] == node and r["start"] - SLACK_NS <= t and (r["end"] is None or t < r["end"] + SLACK_NS)
                   for r in reigns)
    by = {n.name: n for n in nodes}
    split = off = 0
    for n in nodes:
        for c in n.claims:
            t = c["created_ns"]
            if c["copy"] or was_primary(n.name, t):
                continue
            off += 1
            fo = next((f for f in sorted(fos, key=lambda f: -f["stopped"]) if f["old"] == n.name and f["stopped"] <= t),
                      None)
            until = c["ended_ns"]
            if fo is not None and fo["rejoined"] is not None and (until is None or until > fo["rejoined"]):
                until = fo["rejoined"]
            p = by.get(primary_at(t) or "")
            if c["owner"] not in held or p is None or p.name == n.name:
                continue
            reign = next((r for r in reigns if r["node"] == p.name and (r["end"] is None or r["end"] > t)), None)
            if reign is None:
                continue
            for r in p.claims:
                if r["db"] != c["db"] or r["obj"] != c["obj"] or r["owner"] not in held or r["owner"] == c["owner"]:
                    continue
                start = max(r["created_ns"], reign["start"])
                end = r["ended_ns"]
                if reign["end"] is not None:
                    end = reign["end"] if end is None else min(end, reign["end"])
                if (end is None or start < end) and (until is None or start < until) and (end is None or end > t):
                    split += 1
                    break
    return split, off
