"""Fail over: stop the primary so the Sentinels promote a replica (``--topology replicated``).

The primary is stopped with SIGSTOP (an embedded node) or ``docker pause`` (a container, under
``--backend docker``: the cgroup freezer, the container's SIGSTOP), not killed — through its
store's ``pause``, whose undo goes into the ledger first. A stopped primary is what a failover is for — a
process, a VM or a link that stops answering without saying so — and it keeps its process, its
data and its audit connection: when the fault heals it is continued, still believing it is the
primary, holding the claims it acknowledged, until the Sentinels demote it to a replica of the new
primary (``+convert-to-slave`` in their log; about 10 s after it comes back) and it resyncs, dropping
them. A kill would bring back an empty master and cut its ``MONITOR`` stream, and say nothing new.

``lag`` (optional, e.g. ``lag = "500ms"``): first cut the primary's peer path
(``leasecheck.harness.stores.replication``: its replicas and the Sentinels reach it only through its peer proxy),
for that long, then stop it. Writes the workers get acknowledged in that window never reach a
replica — on localhost replication otherwise takes well under a millisecond, so a claim
acknowledged just before a plain stop is almost always on the replica already. The Sentinels,
on the same cut path, see the primary down from the cut on.

Measured, in ``fault_end``:

- ``primary_before``: the node stopped, ``stopped_with``: how (``SIGSTOP``, ``docker pause``);
  ``promoted``: the node that answered ``ROLE`` as master
  first after the stop (None: no promotion while the primary was stopped);
- ``promotion_s``: seconds from the stop to that answer; ``stopped_after_s`` and
  ``promoted_after_s``: the stop and the promotion in seconds after the fault's start (its
  ``fault_start`` record), which is how the checker places them on the history's timeline;
  ``sentinels_switched_s``: to the first Sentinel naming it (``SENTINEL get-master-addr-by-name``);
- ``unreplicated_bytes``: the primary's replication offset at the stop less the furthest replica's
  — bytes it acknowledged that no replica had (0: nothing can be lost);
- ``healed_after_s``: the heal (SIGCONT, ``docker unpause``), in seconds after the fault's start;
- ``rejoined_s``: seconds from the heal until the old primary replicates from the new one
  (None: not within ``REJOIN_WAIT_S``); ``stopped_s``: how long the primary was stopped.

The primary stays stopped for the step's duration and, when the Sentinels have not named a new
primary by then, on until they do — at most ``PROMOTION_WAIT_S`` after the stop (a loaded machine
can take longer than the 1–3 s the Sentinels' timings promise): a primary continued before the
failover happened would test nothing. ``extended_s`` says how much longer than asked it stayed
stopped (0.0: not at all).

``took_effect`` is true when a replica was promoted while the primary was stopped; false, with the
reason, otherwise — a failover that did not happen is never silent.
"""
from __future__ import annotations

import threading
import time

import requests

from leasecheck.harness.errors import UsageError
from leasecheck.harness.faults.base import Active, Fault, FaultContext, Param, Step
from leasecheck.harness.stores.replication import role

POLL_S = 0.02
PROMOTION_WAIT_S = 15.0   # longest a stopped primary waits for the Sentinels to name another
REJOIN_WAIT_S = 15.0


class Failover(Fault):
    name = "failover"
    order = 55
    summary = ("SIGSTOP (or docker pause) the primary so the Sentinels promote a replica "
               "(with lag: cut its replication first)")
    targets = ("primary",)
    default_target = "primary"
    params = (Param("lag", "ms", "lag_ms", "cut the primary's replication this long before stopping it, e.g. 500ms"),)
    store_targets = ("primary",)
    acts = "stops the primary process"
    lasts_ttls = False
    measures = ("primary_before", "stopped_with", "promoted", "promotion_s", "stopped_after_s", "promoted_after_s",
                "healed_after_s", "sentinels_switched_s", "lag_ms",
                "unreplicated_bytes", "stopped_s", "extended_s", "rejoined_s", "took_effect", "why")
    undoes = ("sigcont", "toxic")   # a container's pause writes its store kind's docker-unpause

    def validate(self, cfg, target: str) -> None:
        super().validate(cfg, target)
        if getattr(cfg, "topology", "single") != "replicated":
            raise UsageError(f"failover:{target}: a failover needs replicas and Sentinels; add --topology "
                             "replicated or drop the failover fault")

    def start(self, ctx: FaultContext, step: Step) -> Active:
        begun = time.monotonic()              # the fault's start (its fault_start record)
        repl = ctx.replication
        node = ctx.node_for(step.target)     # the nemesis resolved `primary` to its node
        lag_ms = int(step.params.get("lag_ms") or 0)
        ids = []
        if lag_ms > 0:
            for stream in ("upstream", "downstream"):
                toxic = f"lc-failover-cut-{stream}-{id(step)}"
                ids.append(ctx.ledger.add({"kind": "toxic", "api": repl.api_url,
                                           "proxy": repl.proxy_name(node.name), "toxic": toxic}))
                r = requests.post(f"{repl.api_url}/proxies/{repl.proxy_name(node.name)}/toxics",
                                  json={"name": toxic, "type": "timeout", "stream": stream, "toxicity": 1.0,
                                        "attributes": {"timeout": 0}}, timeout=5)
                r.raise_for_status()
            time.sleep(lag_ms / 1000)
        others = [n for n in repl.nodes if n is not node]
        unreplicated = _offset(node.admin) - max((_offset(n.admin) for n in others), default=0)
        ids.append(ctx.ledger.add(node.store.resume_entry()))
        node.store.pause()
        active = Active(step, ids, data={"node": node, "lag_ms": lag_ms, "unreplicated": unreplicated,
                                         "begun": begun})
        watch = _PromotionWatch(repl, node, others, active.started)
        active.data["watch"] = watch
        watch.start()
        return active

    def stop(self, ctx: FaultContext, active: Active) -> dict:
        node, watch = active.data["node"], active.data["watch"]
        asked = time.monotonic()
        while watch.sentinels_s is None and time.monotonic() - active.started < PROMOTION_WAIT_S:
            time.sleep(POLL_S)            # the Sentinels have not failed over yet: stay stopped
        extended = round(time.monotonic() - asked, 3) if time.monotonic() - asked > 2 * POLL_S else 0.0
        watch.finish()
        stopped = round(time.monotonic() - active.started, 4)
        for ident in active.ledger_ids:       # the cut first, then SIGCONT
            ctx.ledger.heal(ident)
        healed = time.monotonic()
        healed_after = round(healed - active.data["begun"], 3)
        rejoined = None
        if watch.promoted is not None:
            want = ctx.replication.peer_ports[watch.promoted.name]
            clients: dict = {}
            while time.monotonic() - healed < REJOIN_WAIT_S:
                if role(node.store.port, 0.5, clients) == ("slave", want):
                    rejoined = round(time.monotonic() - healed, 3)
                    break
                time.sleep(0.1)
            for c in clients.values():
                c.close()
        promoted = watch.promoted.name if watch.promoted is not None else None
        if promoted:
            why = f"{promoted} answered ROLE master {watch.promotion_s:.3f} s after {node.name} was stopped"
            if active.data["unreplicated"] > 0:
                why += f"; {active.data['unreplicated']} byte(s) {node.name} acknowledged had reached no replica"
            elif active.data["lag_ms"]:
                why += (f"; nothing was written during the {active.data['lag_ms']} ms cut, so the replicas had "
                        "everything: no claim could be lost")
        else:
            why = f"no replica was promoted in the {stopped:.3f} s {node.name} was stopped"
        since_start = round(active.started - active.data["begun"], 3)
        stopped_with = "docker pause" if node.store.kind == "docker" else "SIGSTOP"
        return {"primary_before": node.name, "stopped_with": stopped_with, "promoted": promoted, "promotion_s": watch.promotion_s,
                "stopped_after_s": since_start,
                "promoted_after_s": round(since_start + watch.promotion_s, 3) if promoted else None,
                "sentinels_switched_s": watch.sentinels_s, "lag_ms": active.data["lag_ms"],
                "unreplicated_bytes": active.data["unreplicated"], "stopped_s": stopped, "extended_s": extended,
                "healed_after_s": healed_after, "rejoined_s": rejoined,
                "took_effect": promoted is not None, "why": why}


def _offset(admin) -> int:
    """A node's replication offset (``master_repl_offset`` of ``INFO replication``), 0 if unknown."""
    try:
        return int(admin.info("replication").get("master_repl_offset", 0))
    except Exception:
        return 0


class _PromotionWatch:
    """Polls, from the stop on, which replica answers ``ROLE`` as master and when a Sentinel
    names it — until both are seen or the fault heals."""

    def __init__(self, repl, stopped, others, t0: float):
        self.repl, self.stopped, self.others, self.t0 = repl, stopped, others, t0
        self.promoted = None
        self.promotion_s: float | None = None
        self.sentinels_s: float | None = None
        self._clients: dict = {}            # one connection per node or Sentinel polled, by port
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._run, name="failover-watch", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def finish(self) -> None:
        self._done.set()
        self._thread.join(5)
        for c in self._clients.values():
            c.close()

    def _run(self) -> None:
        while not self._done.is_set() and (self.promoted is None or self.sentinels_s is None):
            if self.promoted is None:
                for n in self.others:
                    if (role(n.store.port, 0.2, self._clients) or ("",))[0] == "master":
                        self.promoted, self.promotion_s = n, round(time.monotonic() - self.t0, 3)
                        break
            if self.sentinels_s is None:
                named = self.repl.sentinel_primary(self._clients)
                if named is not None and named is not self.stopped:
                    self.sentinels_s = round(time.monotonic() - self.t0, 3)
            self._done.wait(POLL_S)
