"""Claims created on a node that was not the primary then (``--topology replicated``): a split brain.

A failover hands the primary's role to a replica, but the old primary does not learn it at once:
continued at the heal, it still believes it is the primary and accepts writes until the Sentinels
demote it (about 10 s later). A worker that reaches it in that window — an idle connection kept
from before the stop, a Sentinel answer that raced the switch, a command left in its socket while
it was stopped and run when it was continued — creates a claim there that the new primary never
sees. If another attempt holds the same key on the new primary meanwhile, the store has two live
claims on one key, on two nodes that both accept writes, and two workers may run the job at once.

Which node was the primary when comes from the failover records (`leasecheck.checkers.measures.failover`): the first
primary until it was stopped, then each promoted node from its promotion until it is stopped in
turn. A lease call's create (not a replica's copy) on any other node is *off the primary*; it is
a split brain when its attempt's acquire returned True and a claim of another attempt whose
acquire returned True was live on the same key on the primary of that moment (or, between a stop
and a promotion, on the node promoted next), while that node was the primary and the off-primary
claim lived: two holders. An off-primary claim lives until it ended on its node, or at the latest
until its node rejoined as a replica (the resync drops it). One whose acquire was not acknowledged
(it timed out: a ``SET`` left in the stopped primary's socket runs when it is continued) holds
nobody's lease, and is reported, not judged.

For example: node1 is stopped at 3.3 s, node2 promoted at 4.2 s, B wins the key on node2 at
5.0 s; node1 is continued at 5.8 s and C's ``SET NX`` reaches it at 6.1 s and creates a claim
there (node1 has no claim on the key): B on node2 and C on node1 both hold the key from 6.1 s.
"""
from __future__ import annotations

from dataclasses import dataclass

from leasecheck.checkers.model.claims import Claim
from leasecheck.checkers.measures.failover import SLACK_NS, Failover, Row, after_heal_rows, node_table


@dataclass
class Reign:
    """A node's time as the primary, in history ns (``end`` None: to the run's end)."""
    node: str
    start: int
    end: int | None


def reigns(fos: list[Failover]) -> list[Reign]:
    """Who was primary when, from the failovers in start order; empty with no failover (then
    nothing says the first primary ever changed). A failover that promoted nobody leaves its
    primary the primary: continued, it is the only one."""
    order = sorted(fos, key=lambda f: f.start)
    if not order:
        return []
    out = [Reign(order[0].old, 0, None)]
    for fo in order:
        if fo.new is None or fo.promoted is None:
            continue
        cur = next((r for r in reversed(out) if r.node == fo.old and r.end is None), None)
        if cur is not None:
            cur.end = fo.stopped
        out.append(Reign(fo.new, fo.promoted, None))
    return out


def primary_at(rs: list[Reign], t: int) -> str | None:
    """The primary at history time ``t``; between a stop and the promotion, the node promoted
    next (what the Sentinels name once they decide)."""
    for r in rs:
        if r.start <= t and (r.end is None or t < r.end):
            return r.node
    return next((r.node for r in rs if r.start > t), None)


def was_primary(rs: list[Reign], node: str, t: int) -> bool:
    """Was ``node`` the primary at ``t``, give or take `failover.SLACK_NS` (two clocks meet here)."""
    return any(r.node == node and r.start - SLACK_NS <= t and (r.end is None or t < r.end + SLACK_NS) for r in rs)


@dataclass
class OffPrimary:
    """A claim a lease call created on ``node`` while ``primary`` was the primary."""
    claim: Claim
    node: str
    primary: str | None
    created: int                      # history ns
    until: int | None                 # history ns: its end on its node, at the latest the rejoin
    failover: Failover | None = None  # the failover that took the primary's role from ``node``
    rival: Claim | None = None        # another attempt's claim on the key, live on the primary meanwhile
    rival_created: int | None = None
    rival_until: int | None = None
    acknowledged: bool = False        # its attempt's acquire returned True

    def to_dict(self) -> dict:
        out = {"attempt": self.claim.owner, "key": self.claim.key, "node": self.node, "primary": self.primary,
               "created_s": _s(self.created), "until_s": _s(self.until), "acknowledged": self.acknowledged}
        if self.failover is not None:
            out["fault"] = self.failover.n
        if self.rival is not None:
            out.update(rival=self.rival.owner, rival_created_s=_s(self.rival_created),
                       rival_until_s=_s(self.rival_until))
        return out


def _s(ns: int | None) -> float | None:
    return round(ns / 1e9, 3) if ns is not None else None


def off_primary(nodes, fos: list[Failover], held: set[str]) -> list[OffPrimary]:
    """Every claim a lease call created on a node that was not the primary then, each with the
    rival claim on the primary that makes it a split brain, if any; split brains first.
    ``held``: the attempts whose acquire returned True."""
    rs = reigns(fos)
    if not rs:
        return []
    by_name = {n.name: n for n in nodes}
    out = []
    for n in nodes:
        for c in n.claims:
            if c.copy:
                continue
            t = n.clock.to_history_ns(c.created)
            if was_primary(rs, n.name, t):
                continue
            fo = next((f for f in sorted(fos, key=lambda f: -f.stopped) if f.old == n.name and f.stopped <= t), None)
            until = n.clock.to_history_ns(c.ended) if c.ended is not None else None
            if fo is not None and fo.rejoined is not None and (until is None or until > fo.rejoined):
                until = fo.rejoined
            x = OffPrimary(c, n.name, primary_at(rs, t), t, until, fo, acknowledged=c.owner in held)
            if x.acknowledged:
                _find_rival(x, by_name.get(x.primary or ""), rs, held)
            out.append(x)
    return sorted(out, key=lambda x: (x.rival is None, x.created))


def _find_rival(x: OffPrimary, primary, rs: list[Reign], held: set[str]) -> None:
    """The first claim of another holder on ``x``'s key on the primary, live there while that node
    was the primary and ``x`` lived."""
    if primary is None or primary.name == x.node:
        return
    reign = next((r for r in rs if r.node == primary.name and (r.end is None or r.end > x.created)), None)
    if reign is None:
        return
    for r in primary.claims:
        if r.db != x.claim.db or r.key != x.claim.key or r.owner not in held or r.owner == x.claim.owner:
            continue
        start = max(primary.clock.to_history_ns(r.created), reign.start)
        end = primary.clock.to_history_ns(r.ended) if r.ended is not None else None
        if reign.end is not None:
            end = reign.end if end is None else min(end, reign.end)
        live = end is None or start < end          # live on it while it was the primary
        if live and (x.until is None or start < x.until) and (end is None or end > x.created):
            x.rival, x.rival_created = r, primary.clock.to_history_ns(r.created)
            x.rival_until = primary.clock.to_history_ns(r.ended) if r.ended is not None else None
            return


def reason(x: OffPrimary, count: int) -> str:
    """The verdict's sentence for ``count`` split brains, told by the first, ``x``."""
    fo = x.failover
    why = (f"{x.node} had been stopped at {fo.stopped / 1e9:.3f} s and {fo.new} promoted at "
           f"{fo.promoted / 1e9:.3f} s" if fo is not None and fo.promoted is not None
           else f"{x.primary} was the primary")
    return (f"split brain: {count} claim(s) created on a node that was no longer the primary while another "
            f"attempt held the key on the primary; the first is {x.claim.owner}'s on {x.claim.key}, created on "
            f"{x.node} at {x.created / 1e9:.3f} s ({why}), and {x.rival.owner}'s claim on {x.primary}, the primary, "
            f"created at {x.rival_created / 1e9:.3f} s and live "
            + (f"until {x.rival_until / 1e9:.3f} s" if x.rival_until is not None else "to the end")
            + ", overlapped it: two live claims on one key on two nodes that both accepted writes")


def note(quiet: list[OffPrimary]) -> str:
    """What is said of off-primary claims no other attempt's claim on the primary overlapped."""
    x = quiet[0]
    acked = sum(q.acknowledged for q in quiet)
    return (f"{len(quiet)} claim(s) created on a node that was not the primary then ({acked} acknowledged to "
            f"their attempt), none of them while another holder held the key on the primary: the first is "
            f"{x.claim.owner}'s on {x.claim.key}, on {x.node} at {x.created / 1e9:.3f} s ({x.primary} was the "
            f"primary; its acquire {'returned True' if x.acknowledged else 'was not acknowledged'})")


def witness_markdown(x: OffPrimary, node_names: list[str]) -> str:
    """The split brain as a timeline, one column per node."""
    a, b, fo = x.claim.owner, x.rival.owner, x.failover
    rows: list[Row] = [
        (x.rival_created, f"B = {b} wins `{x.claim.key}` on {x.primary}", {x.primary: "B's claim created"}),
        (x.created, f"A = {a} creates a claim on `{x.claim.key}` on {x.node}, not the primary",
         {x.node: "A's claim created (not the primary)",
          x.primary: "primary, B's claim live" if x.rival_created <= x.created else "primary"}),
    ]
    if x.until is not None:
        rows.append((x.until, "A's claim ends on " + x.node, {x.node: "A's claim gone"}))
    if x.rival_until is not None:
        rows.append((x.rival_until, "B's claim ends on " + x.primary, {x.primary: "B's claim gone"}))
    if fo is not None:
        rows.append((fo.stopped, f"{fo.old} stopped ({fo.how})", {fo.old: "stopped"}))
        if fo.promoted is not None:
            rows.append((fo.promoted, f"{fo.new} promoted by the Sentinels", {fo.new: "primary"}))
        rows += after_heal_rows(fo)
    lines = [f"## Split brain on `{x.claim.key}`", "",
             f"{a}'s claim was created on {x.node} after it had lost the primary's role, while {b}'s claim on the "
             f"same key was live on {x.primary}, the primary: two holders, each on a node that accepted writes.",
             "", *node_table(rows, node_names)]
    return "\n".join(lines) + "\n"
