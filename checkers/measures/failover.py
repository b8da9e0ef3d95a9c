"""Claims lost in a failover (``--topology replicated``), from each node's audit.

Under replication the store's truth at a moment is the node that is primary then. A failover
(the ``failover`` fault: ``fault_end`` measures ``primary_before``, ``promoted`` and when, in
seconds after the fault's start) hands that role to a replica, which has only what reached it by
replication. A replica's ``MONITOR`` shows the commands it applies from its primary (from the
replication link's address, which no lease call sent: an unattributed line), so its audit,
modelled like any node's (``leasecheck.checkers.model.nodes``), holds a copy of every claim that reached it, with
the value it was created with and, as its owner, the attempt whose create wrote that value.

A claim is ``lost_in_failover`` when

- an attempt created it on the old primary and its acquire returned True (acknowledged),
- it was still live there when the primary was stopped (not released, not expired), and
- the promoted node's audit shows no create of that key with that value before its promotion.

Such a loss is an early loss with cause ``failover`` when another attempt then won the key (on
the new primary) while the holder still held it: its acquire completed before the holder's
promise ran out (the acquire's invocation + TTL, less ``2 ms + 1 %``) and before the holder
invoked its release (``leasecheck.checkers.measures.mutual_exclusion.holds``) — two holders at once.

For example: A's ``SET NX`` is acknowledged by node1 at 3.18 s while node1's replication is cut;
node1 is stopped at 3.32 s; node2 answers ``ROLE`` master at 4.24 s and its audit never showed
A's value; B wins the key on node2 at 5.21 s, before A's deadline at 7.13 s: A's claim was lost
in the failover, and A and B both held the key from 5.21 s.

Where the results put it: ``lost_in_failover`` is a claim fate like the others, counted in
results.json's ``claims`` (`leasecheck.checkers.model.replicated` follows each claim across failovers), and
``failover`` a cause of ``early_loss`` (`early_losses`), judged there; the ``failover`` field keeps
what only a failover has: who was promoted when, and the lost claims themselves.
"""
from __future__ import annotations

from dataclasses import dataclass

from leasecheck.checkers.model.claims import Claim
from leasecheck.checkers.measures.early_loss import EarlyLoss, allowance_ms
from leasecheck.checkers.measures.mutual_exclusion import Hold

# A replicated create and the promotion are seen on two clocks (the new primary's store clock
# mapped to the history, the harness's ROLE poll): a copy is taken as there before the promotion
# if it is no later than this after it.
SLACK_NS = 50_000_000


@dataclass
class Failover:
    """One failover, on the history's clock (ns)."""
    n: int
    old: str
    new: str | None
    start: int
    stopped: int
    promoted: int | None
    end: int | None        # the heal (SIGCONT of the old primary)
    rejoined: int | None = None   # the old primary replicating from the new one
    how: str = "SIGSTOP"   # how it was stopped (``docker pause`` of its container on Docker)


@dataclass
class Lost:
    """A claim acknowledged by the old primary that the promoted node never had."""
    attempt: str
    key: str
    token: str | None
    node: str              # the old primary, where it was created
    promoted: str          # the node promoted without it
    failover: int          # the failover's fault number
    created: int           # history ns (the old primary's clock)
    newcomer: Hold | None = None   # the attempt that then won the key while the holder held it
    hold: Hold | None = None       # the holder's own hold
    claim: Claim | None = None     # the claim on the old primary

    def to_dict(self) -> dict:
        out = {"attempt": self.attempt, "key": self.key, "node": self.node, "promoted": self.promoted,
               "fault": self.failover, "created_s": round(self.created / 1e9, 3), "fate": "lost_in_failover"}
        if self.hold is not None:   # its release's invocation, or the end of the validity it was promised
            out["held_until_s"] = round(self.hold.end / 1e9, 3)
        if self.newcomer is not None:
            out.update(cause="failover", newcomer=self.newcomer.attempt,
                       newcomer_won_s=round(self.newcomer.start / 1e9, 3))
        return out


def failovers(faults: list[dict]) -> list[Failover]:
    """The run's failovers (`leasecheck.checkers.read.faults` summaries of ``failover`` faults that ended)."""
    out = []
    for f in faults:
        m = f.get("measured") or {}
        if f.get("fault") != "failover" or not m.get("primary_before"):
            continue
        start = round(float(f["start_s"]) * 1e9)
        stopped_after = m.get("stopped_after_s")
        if not isinstance(stopped_after, (int, float)):
            stopped_after = (m.get("lag_ms") or 0) / 1000
        promoted_after = m.get("promoted_after_s")
        if not isinstance(promoted_after, (int, float)) and isinstance(m.get("promotion_s"), (int, float)):
            promoted_after = stopped_after + m["promotion_s"]
        promoted = start + round(promoted_after * 1e9) if m.get("promoted") and promoted_after is not None else None
        end = round(float(f["end_s"]) * 1e9) if isinstance(f.get("end_s"), (int, float)) else None
        if isinstance(m.get("healed_after_s"), (int, float)):
            end = start + round(m["healed_after_s"] * 1e9)   # fault_end comes after the rejoin
        rejoined = end + round(m["rejoined_s"] * 1e9) if end is not None and isinstance(m.get("rejoined_s"), (int, float)) \
            else None
        out.append(Failover(f.get("n"), m["primary_before"], m.get("promoted"), start,
                            start + round(stopped_after * 1e9), promoted, end, rejoined,
                            m.get("stopped_with") or "SIGSTOP"))
    return out


def lost_in_failover(nodes, fos: list[Failover], hs: list[Hold]) -> list[Lost]:
    """Every claim lost in one of ``fos`` (``nodes``: `leasecheck.checkers.model.nodes.NodeMeasure` per node), with
    the newcomer that won its key while its holder still held it, if any (``hs``: the run's holds,
    `mutual_exclusion.holds`)."""
    by_name = {n.name: n for n in nodes}
    by_attempt = {h.attempt: h for h in hs}
    out = []
    for fo in fos:
        old, new = by_name.get(fo.old), by_name.get(fo.new or "")
        if old is None or new is None or fo.promoted is None or not new.complete:
            continue                          # an incomplete audit cannot show what never arrived
        for c in old.claims:
            if c.owner is None or c.owner not in by_attempt:
                continue                      # not a create acknowledged to an attempt
            if not live_at(c, old, fo.stopped) or copy_of(c, new, fo) is not None:
                continue                      # made after the stop, gone before it, or the replica had it
            h = by_attempt[c.owner]
            # the newcomer: another attempt whose hold of the same key began after the stop while
            # the holder's ran (a lease may keep its claim under a key of its own: holds are by job key)
            rival = next((o for o in hs if o.attempt != c.owner and o.start >= fo.stopped and h.overlaps(o)), None)
            out.append(Lost(c.owner, c.key, c.token, fo.old, new.name, fo.n, old.clock.to_history_ns(c.created),
                            rival, h, c))
    return sorted(out, key=lambda x: (x.newcomer is None, x.created))


def live_at(c: Claim, node, t: int) -> bool:
    """Was claim ``c`` of ``node`` there at history time ``t``: made by then and not yet ended?"""
    if node.clock.to_history_ns(c.created) > t:
        return False
    return c.ended is None or node.clock.to_history_ns(c.ended) > t


def copy_of(c: Claim, new, fo: Failover) -> Claim | None:
    """The copy of ``c`` (same key, same value) that node ``new`` had by its promotion in ``fo``."""
    found = [x for x in new.claims if x.db == c.db and x.key == c.key and x.token == c.token
             and new.clock.to_history_ns(x.created) <= fo.promoted + SLACK_NS]
    return found[-1] if found else None


def early_losses(lost: list[Lost], ttl_ms: float) -> list[EarlyLoss]:
    """The claims lost in failover whose key another attempt then won while their holder still
    held it, as early losses with cause ``failover``: the deadline is the lease's (the TTL after
    the acquire's invocation, less `early_loss.allowance_ms`), the newcomer's time its winning
    acquire's completion."""
    out = []
    for x in lost:
        if x.newcomer is None or x.hold is None:
            continue
        since = x.hold.invoked
        deadline = since + round((ttl_ms - allowance_ms(ttl_ms)) * 1e6)
        out.append(EarlyLoss(x.attempt, x.newcomer.attempt, x.hold.key, x.claim, "failover", since, deadline,
                             x.newcomer.start))
    return out


def reason(x: Lost, fo: Failover, count: int) -> str:
    """The verdict's sentence for ``count`` claims lost in failover that another attempt then
    held, told by the first, ``x``."""
    return (f"{count} claim(s) lost in failover while another attempt then held the key (early loss, "
            f"cause failover): the first is {x.attempt}'s on {x.key}, acknowledged by {x.node} at "
            f"{x.created / 1e9:.3f} s; {x.node} was stopped at {fo.stopped / 1e9:.3f} s before any replica had it, "
            f"{x.promoted} was promoted at {fo.promoted / 1e9:.3f} s without it, and {x.newcomer.attempt} won the "
            f"key there at {x.newcomer.start / 1e9:.3f} s, before {x.attempt}'s promise ended at "
            f"{x.hold.end / 1e9:.3f} s")


Row = tuple[int, str, dict[str, str]]   # history ns, what happened, what each node's column says


def witness_markdown(lost: Lost, fo: Failover, node_names: list[str]) -> str:
    """The story of one loss as a timeline, one column per node."""
    a, b = lost.attempt, lost.newcomer.attempt if lost.newcomer else None
    rows: list[Row] = [
        (lost.created, f"A = {a} acquires `{lost.key}` (acknowledged)", {lost.node: "A's claim created"}),
        (fo.start, f"failover fault {fo.n} starts", {}),
        (fo.stopped, f"{fo.old} stopped ({fo.how})", {fo.old: "stopped; A's claim never replicated"}),
        (fo.promoted, f"{lost.promoted} promoted by the Sentinels",
         {lost.promoted: "primary, without A's claim"}),
    ]
    if lost.hold is not None:
        rows.append((lost.hold.end, f"A's promise ends ({'release invoked' if lost.hold.released else 'TTL'})", {}))
    if lost.newcomer is not None:
        rows.append((lost.newcomer.start, f"B = {b} wins `{lost.key}` while A still holds it",
                     {lost.promoted: "B's claim created"}))
    rows += after_heal_rows(fo)
    lines = [f"## Claim lost in failover on `{lost.key}`", "",
             f"{a}'s claim was acknowledged by {lost.node}, which was stopped before any replica had it; "
             f"{lost.promoted} was promoted without it"
             + (f", and {b} then won the key while {a} still held it (early loss, cause failover)." if b else "."),
             "", *node_table(rows, node_names)]
    return "\n".join(lines) + "\n"


def after_heal_rows(fo: Failover) -> list[Row]:
    """A failover's heal and the old primary's demotion, as timeline rows (those that happened)."""
    rows: list[Row] = []
    if fo.end is not None:
        rows.append((fo.end, f"fault healed: {fo.old} continued", {fo.old: "continued, still a primary"}))
    if fo.rejoined is not None:
        rows.append((fo.rejoined, f"the Sentinels made {fo.old} a replica of {fo.new}",
                     {fo.old: f"replica of {fo.new}, resynced"}))
    return rows


def node_table(rows: list[Row], node_names: list[str]) -> list[str]:
    """Timeline rows as a Markdown table in time order, one column per node."""
    lines = ["| time (s) | what | " + " | ".join(node_names) + " |", "|---|---|" + "---|" * len(node_names)]
    for t, what, cells in sorted(rows, key=lambda r: r[0]):
        lines.append(f"| {t / 1e9:.3f} | {what} | " + " | ".join(cells.get(n, "") for n in node_names) + " |")
    return lines
