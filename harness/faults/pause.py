"""Pause processes with SIGSTOP and continue them with SIGCONT — a GC pause, a VM stall.

Targets: ``holder`` (a worker that holds a claim right now, outside ``release()``: the classic
failure needs the holder stalled past its deadline; a holder that let go between the pick and the
stop is continued at once and another picked), ``worker`` (one at random), ``workers``
(about half of them, at random), ``store`` (the store the harness started: clients time out,
queued commands run on SIGCONT, TTLs keep running), and three aimed at lease calls: ``releaser``, ``acquirer``,
``renewer`` — the worker one of whose slots is inside ``release()`` / ``acquire()`` / ``renew()``
right now (``leasecheck.harness.run.holders`` knows from the slots' ``in``/``out`` lines; it waits up to
``CALL_WAIT_S`` for one, then pauses a worker at random). With ``latency`` on the workers' path the
reply of a release's read is in transit for that long, so a releaser paused then is stopped
between its check and its act: where a read-compare-delete release breaks. The store pauses
through its own ``pause()``: SIGSTOP for the embedded process, the cgroup freezer (``docker
pause``) for a container; its ``resume_entry()`` is the undo.

Measured while it acts: ``stopped_s``, the longest unbroken span in which every paused process
was seen stopped — state ``T`` in ``/proc/PID/stat``, or, for a container, the daemon reporting it
paused — sampled every 20 ms (100 ms for a container) until just before SIGCONT. An aimed pause also
measures ``in_call``: whether the slot it aimed at was still inside that very call when the pause
ended (it had not reported leaving it before it was stopped), i.e. whether the pause landed while
the call was in flight; ``slot`` names it, ``waited_s`` is how long it waited for one (false and
null when none came and a random worker was paused instead). An aimed pause stops its slot while
the call's first command is in flight (a call that has sent nothing yet is given until it sends),
and a ``releaser`` pause picks only a release whose claim has a quarter of a TTL or more left:
once the picked worker is seen stopped, the pause looks at the board, and a slot that has left the
call, or whose call has sent more than that first command (the pick came after the check, or the
stop took hold too late), is continued at once and the pause aims again, within ``CALL_WAIT_S``
of its start; ``retries`` counts those missed picks. A paused worker's child processes
(an ``exec:`` lease's, one per slot) are stopped and continued with it, each with an undo entry of
its own, and counted among the processes that must be seen stopped.
"""
from __future__ import annotations

import os
import signal
import time

from leasecheck.harness.faults.base import Active, Fault, FaultContext, Step
from leasecheck.harness.faults.watch import Watch
from leasecheck.harness.run.holders import worker_index
from leasecheck.harness.run.host import proc_started
from leasecheck.harness.run.procfs import descendants, is_stopped


AIMED = {"releaser": "release", "acquirer": "acquire", "renewer": "renew"}   # target -> lease call
CALL_WAIT_S = 5.0
HOLDER_WAIT_S = 2.0     # for a holder to aim at, the picks that missed included
STOP_SEEN_S = 1.0       # for a SIGSTOPped worker to show state T (not seen by then: held false)
RESUME_WAIT_S = 0.5     # a releaser's pause waits this long at most past its duration for another holder
LIVE_TTLS = 0.25        # a releaser's pause picks a release whose claim has this much of a TTL left, or more


class Pause(Fault):
    name = "pause"
    order = 10
    summary = "SIGSTOP then SIGCONT, as a GC pause or a VM stall"
    targets = ("holder", "worker", "workers", "store", "releaser", "acquirer", "renewer")
    default_target = "holder"
    node_target = "store"           # pause:node2 stops node2's store alone
    store_targets = ("store",)
    acts = "pauses the store process"
    measures = ("paused_s", "stopped_s", "stopped_samples", "processes", "in_call", "slot", "waited_s", "held", "retries")
    undoes = ("sigcont",)   # leasecheck.harness.nemesis.heal's own; a container's pause writes docker-unpause

    def start(self, ctx: FaultContext, step: Step) -> Active:
        if self.acts_as(step.target) == "store":
            store = ctx.node_for(step.target).store
            ids = [ctx.ledger.add(store.resume_entry())]
            store.pause()
            period = 0.1 if store.kind == "docker" else 0.02  # an API call vs /proc
            return Active(step, ids, data={"pids": [], "names": [step.target],
                                           "watch": Watch(store.is_paused, period).start()})
        aimed = held = None
        if step.target in AIMED:
            aimed, pids, names, ids = self._stop_caller(ctx, AIMED[step.target])
        elif step.target == "holder":
            held, pids, names, ids = self._stop_holder(ctx)
        else:
            pids, names = self._pick(ctx, step.target)
            pids, ids = self._stop_all(ctx, pids)
        watch = Watch(lambda: bool(pids) and all(is_stopped(p) for p in pids)).start()
        return Active(step, ids, data={"pids": pids, "names": names, "watch": watch, "aimed": aimed, "held": held})

    def stop(self, ctx: FaultContext, active: Active) -> dict:
        watch = active.data["watch"]
        aimed = active.data.get("aimed")
        resumed = None
        if active.step.target == "releaser" and aimed is not None and aimed["slot"] is not None:
            # A release stopped between its check and its act harms only if another attempt holds
            # the key when it resumes: end the pause once one does (a claim held outside
            # release()), waiting up to RESUME_WAIT_S past the duration — with 100 ms replies the
            # key is free for a round trip between two holders, and a resume there finds nothing.
            t = time.monotonic()
            found = ctx.holders.wait_for_holding_slot(RESUME_WAIT_S)
            resumed = {"resumed_on": found[0] if found is not None else None,
                       "resume_waited_s": round(time.monotonic() - t, 4)}
        stopped = watch.stop()  # before SIGCONT
        # Before SIGCONT: a stopped slot reports nothing more, and what it wrote before the stop
        # has been read by now, so "not left yet" means the stop came inside the call.
        in_call = bool(aimed and aimed["number"] is not None and ctx.holders.still_in(aimed["slot"], aimed["number"]))
        for ident in active.ledger_ids:
            ctx.ledger.heal(ident)
        measured = {"paused_s": round(time.monotonic() - active.started, 4),
                    "stopped_s": stopped, "stopped_samples": [watch.held, watch.samples],
                    "processes": active.data["names"]}
        if aimed is not None:
            measured.update(in_call=in_call, slot=aimed["slot"], waited_s=aimed["waited_s"], retries=aimed["retries"])
        if resumed is not None:
            measured.update(resumed)
        held = active.data.get("held")
        if held is not None:
            measured.update(held)
        return measured

    @staticmethod
    def _stop_all(ctx: FaultContext, workers: list[int]) -> tuple[list[int], list[int]]:
        """SIGSTOP each worker and its child processes (an exec: lease's), each with its undo."""
        pids = [p for w in workers for p in (w, *descendants(w))]
        ids = []
        for pid in pids:
            ids.append(ctx.ledger.add({"kind": "sigcont", "pid": pid, "started": proc_started(pid)}))
            try:
                os.kill(pid, signal.SIGSTOP)
            except ProcessLookupError:
                pass
        return pids, ids

    def _stop_holder(self, ctx: FaultContext) -> tuple[dict, list[int], list[str], list[int]]:
        """Stop the worker of the slot that claimed last, then look at the board once it is seen
        stopped (frozen, it reports nothing more): when that slot no longer holds the same claim
        outside ``release()`` — its job ended between the pick and the stop, which a loaded machine
        makes likely with short jobs — continue it at once and aim again, within ``HOLDER_WAIT_S``
        in all. ``held`` says whether the stopped slot still held its claim; ``retries`` how many
        picks missed. When no holder comes in time, a worker at random is paused (``slot`` null)."""
        deadline = time.monotonic() + HOLDER_WAIT_S
        retries = 0
        while True:
            found = ctx.holders.wait_for_holding_slot(max(0.0, deadline - time.monotonic()))
            i = worker_index(found[0]) if found is not None else None
            if i is None or ctx.workers[i].poll() is not None:
                pids, names = self._pick(ctx, "worker")
                pids, ids = self._stop_all(ctx, pids)
                return {"slot": None, "held": False, "retries": retries}, pids, names, ids
            process, since = found
            pids, ids = self._stop_all(ctx, [ctx.workers[i].pid])
            seen = _seen_stopped(pids)
            still = seen and ctx.holders.still_holds(process, since)
            if still or time.monotonic() >= deadline:
                return {"slot": process, "held": bool(still), "retries": retries}, pids, [f"w{i}"], ids
            for ident in reversed(ids):
                ctx.ledger.heal(ident)
            retries += 1

    def _stop_caller(self, ctx: FaultContext, call: str) -> tuple[dict, list[int], list[str], list[int]]:
        """Stop the worker of the slot that entered ``call`` last while that call's first command
        is in flight — sent (so it ran, or is about to, in the store) and its reply not yet acted
        on: where a check-then-act call has checked but not acted. A release is picked only while
        its claim has a quarter of a TTL or more left (``LIVE_TTLS``, from when the claim was taken
        or last renewed, by the harness's clock): the release of a claim already past its deadline
        — a job longer than the TTL — has nothing left for the pause to expire, and a check-then-act
        release's read would already see the next holder. A call that has sent nothing yet
        is given until it sends (stopped before its read, it would read the state after the pause
        and act on that). Once the worker is seen stopped the pause looks at the board: when the
        slot has left the call, or its call has sent more than that one command (the pick came
        late, or the stop took hold too late: a check-then-act release's delete may have gone),
        the worker is continued at once and the pause aims at another call — within
        ``CALL_WAIT_S`` of its start in all (one long job after a missed pick can keep the next
        call away for more than a TTL); a pick made as that time runs out stands, and when no slot
        enters ``call`` in time a random worker is paused (``slot`` null). ``retries`` counts the
        picks that missed."""
        t = time.monotonic()
        until = t + CALL_WAIT_S
        retries, missed = 0, set()
        live = {"live_s": LIVE_TTLS * ctx.cfg.ttl_s, "ttl_s": ctx.cfg.ttl_s} if call == "release" else {}
        while True:
            found = ctx.holders.wait_for_call(call, timeout_s=max(0.0, until - time.monotonic()), exclude=missed,
                                              **live)
            i = worker_index(found[0]) if found is not None else None
            if found is None or ctx.workers[i].poll() is not None:   # none came, or its worker died inside
                pids, names = self._pick(ctx, "worker")
                pids, ids = self._stop_all(ctx, pids)
                return {"slot": None, "number": None, "waited_s": None, "retries": retries}, pids, names, ids
            slot, number = found
            while ctx.holders.sent(slot) == 0 and ctx.holders.still_in(slot, number) and time.monotonic() < until:
                time.sleep(0.0005)
            pids, ids = self._stop_all(ctx, [ctx.workers[i].pid])
            landed = _seen_stopped(pids) and ctx.holders.still_in(slot, number) and ctx.holders.sent(slot) == 1
            if landed or time.monotonic() >= until:
                aimed = {"slot": slot, "number": number, "waited_s": round(time.monotonic() - t, 4), "retries": retries}
                return aimed, pids, [f"w{i}"], ids
            for ident in reversed(ids):
                ctx.ledger.heal(ident)
            missed.add(found)
            retries += 1

    def _pick(self, ctx: FaultContext, target: str) -> tuple[list[int], list[str]]:
        """``worker`` (one at random) or ``workers`` (about half); a holder is `_stop_holder`'s."""
        alive = [i for i, w in enumerate(ctx.workers) if w.poll() is None]
        if target == "worker":
            chosen = [ctx.rng.choice(alive)] if alive else []
        else:
            chosen = sorted(ctx.rng.sample(alive, max(1, len(alive) // 2))) if alive else []
        return [ctx.workers[i].pid for i in chosen], [f"w{i}" for i in chosen]


def _seen_stopped(pids: list[int]) -> bool:
    """Whether every one of ``pids`` shows state T within ``STOP_SEEN_S``. The board is judged only
    once a worker is seen stopped: on a loaded machine a SIGSTOP can take a scheduling slice or
    more to take hold, and the slot runs on meanwhile."""
    seen_by = time.monotonic() + STOP_SEEN_S
    seen = all(is_stopped(p) for p in pids)
    while not seen and time.monotonic() < seen_by:
        time.sleep(0.001)
        seen = all(is_stopped(p) for p in pids)
    return seen
