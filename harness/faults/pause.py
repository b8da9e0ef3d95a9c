"""Pause processes with SIGSTOP and continue them with SIGCONT — a GC pause, a VM stall.

Targets: ``holder`` (a worker that holds a claim right now: the classic failure needs the
holder stalled past its deadline), ``worker`` (one at random), ``workers`` (about half of them, at
random), ``store`` (the store the harness started: clients time out, queued commands run on
SIGCONT, TTLs keep running). The store pauses through its own ``pause()``: SIGSTOP for the embedded
process, the cgroup freezer (``docker pause``) for a container; its ``resume_entry()`` is the undo.

Measured while it acts: ``stopped_s``, the longest unbroken span in which every paused process
was seen stopped — state ``T`` in ``/proc/PID/stat``, or, for a container, the daemon reporting it
paused — sampled every 20 ms (100 ms for a container) until just before SIGCONT.
"""
from __future__ import annotations

import os
import signal
import time

from harness.faults.base import Active, Fault, FaultContext, Step
from harness.faults.watch import Watch
from harness.host import proc_started
from harness.procfs import is_stopped


class Pause(Fault):
    name = "pause"
    order = 10
    summary = "SIGSTOP then SIGCONT, as a GC pause or a VM stall"
    targets = ("holder", "worker", "workers", "store")
    default_target = "holder"
    store_targets = ("store",)
    acts = "pauses the store process"
    measures = ("paused_s", "stopped_s", "stopped_samples", "processes")
    undoes = ("sigcont",)   # harness.heal's own; a container's pause writes docker-unpause

    def start(self, ctx: FaultContext, step: Step) -> Active:
        if step.target == "store":
            ids = [ctx.ledger.add(ctx.store.resume_entry())]
            ctx.store.pause()
            period = 0.1 if getattr(ctx.cfg, "backend", "embedded") == "docker" else 0.02  # an API call vs /proc
            return Active(step, ids, data={"pids": [], "names": ["store"],
                                           "watch": Watch(ctx.store.is_paused, period).start()})
        pids, names = self._pick(ctx, step.target)
        ids = []
        for pid in pids:
            ids.append(ctx.ledger.add({"kind": "sigcont", "pid": pid, "started": proc_started(pid)}))
            try:
                os.kill(pid, signal.SIGSTOP)
            except ProcessLookupError:
                pass
        watch = Watch(lambda: bool(pids) and all(is_stopped(p) for p in pids)).start()
        return Active(step, ids, data={"pids": pids, "names": names, "watch": watch})

    def stop(self, ctx: FaultContext, active: Active) -> dict:
        watch = active.data["watch"]
        stopped = watch.stop()  # before SIGCONT
        for ident in active.ledger_ids:
            ctx.ledger.heal(ident)
        return {"paused_s": round(time.monotonic() - active.started, 4),
                "stopped_s": stopped, "stopped_samples": [watch.held, watch.samples],
                "processes": active.data["names"]}

    def _pick(self, ctx: FaultContext, target: str) -> tuple[list[int], list[str]]:
        alive = [i for i, w in enumerate(ctx.workers) if w.poll() is None]
        if target == "holder":
            holding = ctx.holders.wait_for_holder(timeout_s=2.0)
            chosen = [holding] if holding is not None else []
            if not chosen and alive:
                chosen = [ctx.rng.choice(alive)]
        elif target == "worker":
            chosen = [ctx.rng.choice(alive)] if alive else []
        else:
            chosen = sorted(ctx.rng.sample(alive, max(1, len(alive) // 2))) if alive else []
        return [ctx.workers[i].pid for i in chosen], [f"w{i}" for i in chosen]
