"""Pause processes with SIGSTOP and continue them with SIGCONT — a GC pause, a VM stall.

Targets: ``holder`` (a worker that holds a claim right now: the brief's failure needs the holder
stalled past its deadline), ``worker`` (one at random), ``workers`` (about half of them, at
random), ``store`` (the store the harness started: clients time out, queued commands run on
SIGCONT, TTLs keep running). The store pauses through its own ``pause()``: SIGSTOP for the embedded
process, the cgroup freezer (``docker pause``) for a container; its ``resume_entry()`` is the undo.
"""
from __future__ import annotations

import os
import signal
import time

from harness.errors import UsageError
from harness.faults.base import Active, Fault, FaultContext, Step, refuse_external_store
from harness.heal import proc_started


class Pause(Fault):
    name = "pause"
    targets = ("holder", "worker", "workers", "store")
    default_target = "holder"

    def validate(self, cfg, target: str) -> None:
        super().validate(cfg, target)
        if target == "store" and getattr(cfg, "backend", "embedded") == "compose":
            raise UsageError("--nemesis pause:store: with --backend compose the stack owns the store; "
                             "use --backend docker (the harness starts and pauses its own container)")
        if target == "store":
            refuse_external_store(cfg, "pause:store", "pauses the store process", "the store target")

    def start(self, ctx: FaultContext, step: Step) -> Active:
        if step.target == "store":
            ids = [ctx.ledger.add(ctx.store.resume_entry())]
            ctx.store.pause()
            return Active(step, ids, data={"pids": [], "names": ["store"]})
        pids, names = self._pick(ctx, step.target)
        ids = []
        for pid in pids:
            ids.append(ctx.ledger.add({"kind": "sigcont", "pid": pid, "started": proc_started(pid)}))
            try:
                os.kill(pid, signal.SIGSTOP)
            except ProcessLookupError:
                pass
        return Active(step, ids, data={"pids": pids, "names": names})

    def stop(self, ctx: FaultContext, active: Active) -> dict:
        for ident in active.ledger_ids:
            ctx.ledger.heal(ident)
        return {"paused_s": round(time.monotonic() - active.started, 4),
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
