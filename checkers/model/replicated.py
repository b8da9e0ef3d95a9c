"""A replicated run (``--topology replicated``) as one store over time, from its nodes' audits,
measured once for the properties that report it (`measured`).

Each node's audit is modelled on its own (`leasecheck.checkers.model.nodes`); a claim is created by a lease call on
the node that is primary then, and a replica holds copies of it. So a claim of the run is each
create by a lease call, on whichever node, once (`resolved_claims`): a claim still there when its
node was stopped in a failover lives on as its copy on the promoted node, whose fate there is its
fate — or, with no copy there, it was ``lost_in_failover`` (`leasecheck.checkers.measures.failover`). The claim fates,
the overlaps' causes and the losses while held are measured from these claims; the early losses
other than a failover's from each node's own claims, as one store's (`node_early_losses`).
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field, replace

from leasecheck.checkers.model.claims import FATES, Claim
from leasecheck.checkers.measures.early_loss import EarlyLoss, EarlyLossResult
from leasecheck.checkers.measures.early_loss import early_losses as store_early_losses
from leasecheck.checkers.measures.failover import Failover, Lost, copy_of, failovers, live_at, lost_in_failover


def applies(m) -> bool:
    """A property of replicated runs reports only on one whose nodes' audits were measured."""
    return m.nodes is not None and m.config.get("topology") == "replicated"


def resolved_claims(nodes, fos: list[Failover], lost: list[Lost]) -> list[Claim]:
    """Every claim a lease call created in a replicated run, on whichever node, once — copies are
    not claims of their own — with its fate across failovers and its times on the history clock
    (``created``/``ended`` in history seconds: the nodes' store clocks differ), what the claim
    fates, the overlaps' causes and the losses while held are measured from.

    A claim still there when its node was stopped in a failover has the fate of its copy on the
    promoted node (followed through later failovers the same way); with no copy there, it was
    ``lost_in_failover`` (ended at the promotion) when its create was acknowledged, ``unknown``
    when the promoted node's audit is missing or incomplete, and otherwise (a create whose
    acquire never returned True) its fate on its node."""
    by_name = {n.name: n for n in nodes}
    lost_at = {(x.node, x.claim.id): fo.promoted for x in lost if x.claim is not None
               for fo in fos if fo.n == x.failover}
    order = sorted((f for f in fos if f.promoted is not None), key=lambda f: f.start)

    def end(c: Claim, node, after: int | None) -> tuple[str, int | None, Claim]:
        """(fate, history ns it ended, the claim it ended as)."""
        if (node.name, c.id) in lost_at:
            return "lost_in_failover", lost_at[(node.name, c.id)], c
        for fo in order:
            if fo.old != node.name or (after is not None and fo.start <= after) or not live_at(c, node, fo.stopped):
                continue
            new = by_name.get(fo.new)
            if new is None or not new.complete:
                return "unknown", None, c
            copy = copy_of(c, new, fo)
            if copy is not None:
                return end(copy, new, fo.start)
            break
        return c.fate or "unknown", node.clock.to_history_ns(c.ended) if c.ended is not None else None, c

    out = []
    for n in nodes:
        for c in n.claims:
            if c.copy:
                continue
            fate, ended, last = end(c, n, None)
            out.append(replace(c, fate=fate, created=n.clock.to_history_ns(c.created) / 1e9,
                               ended=ended / 1e9 if ended is not None else None,
                               gone_ns=last.gone_ns, gone_op=last.gone_op))
    return out


def claim_fates(claims: list[Claim]) -> dict[str, int]:
    """Claims per fate (`claims.FATES`), every fate present."""
    counts = Counter(c.fate for c in claims)
    return {f: counts.get(f, 0) for f in FATES}


def node_early_losses(nodes, runs, promises, ttl_ms: float | None) -> tuple[EarlyLossResult, dict[int, object]]:
    """The early losses each node shows as one store would (`early_loss.early_losses`): a holder's
    claim and the newcomer's both created on that node by lease calls — a clock jump or an
    eviction on the primary of the moment. A replica's copies are left out (what a replica does to
    them follows its primary, whose own claims show it). Returns them with the node of each
    (by the claim's ``id()``, for its store clock)."""
    out, where = EarlyLossResult(), {}
    for n in nodes:
        found = store_early_losses(runs, promises, [c for c in n.claims if not c.copy], ttl_ms)
        out.losses += found.losses
        out.undecided += found.undecided
        where.update({id(x.claim): n for x in found.losses})
    out.losses.sort(key=lambda x: x.newcomer_start)
    return out, where


@dataclass
class FailoverMeasure:
    """A replicated run's failovers, the claims lost in them and the claims' fates, measured once
    for the properties that report them (`measured`)."""
    failovers: list[Failover]
    lost: list[Lost]
    claims: list[Claim] = field(default_factory=list)   # `resolved_claims`: times in history seconds

    @property
    def fates(self) -> dict[str, int]:
        return claim_fates(self.claims)

    def story(self, loss: EarlyLoss) -> tuple[Lost, Failover]:
        """The lost claim behind an early loss with cause failover, and its failover."""
        x = next(x for x in self.lost if x.attempt == loss.holder and x.claim is loss.claim)
        return x, next(f for f in self.failovers if f.n == x.failover)


def measured(m) -> FailoverMeasure | None:
    """`m`'s failovers (a `measure.Measured` of a replicated run whose nodes' audits were
    measured), measured on first use and kept in ``m.failover``; None for any other run."""
    if m.nodes is None or m.config.get("topology") != "replicated":
        return None
    if getattr(m, "failover", None) is None:
        fos = failovers(m.faults() or [])
        lost = lost_in_failover(m.nodes, fos, m.holds)
        m.failover = FailoverMeasure(fos, lost, resolved_claims(m.nodes, fos, lost))
    return m.failover
