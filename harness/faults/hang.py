"""Hang the holder's job — ``hang:holder``: the job of a slot that holds a claim stops making
progress for the step's duration, while its process, its connection and its renewals keep running
(the worker freezes only the job's clock: ``leasecheck.workloads.stall``). Unlike ``pause``, which
stops the whole process (renewals included, so the claim runs out), a hung holder's auto-renewing
lease keeps its claim alive for as long as the hang lasts: the liveness case of a renewal thread
that outlives the work it guards.

Aimed like ``pause:holder``: the slot that claimed last and is not inside ``release()``, waiting
up to 2 s for one (none: nothing is hung, and the fault says so). Healed with ``unhang`` on the
worker's stdin (ledger kind ``unhang``; a worker whose harness died exits on its own).

Measured while it acts: ``slot`` (the slot hung, or null), ``in_job`` (the worker answered that
the slot was inside a job when it froze it), ``held_through`` (at the heal the slot still held the
same claim it held when frozen: the job had not ended), ``calls_during`` (lease calls the slot
entered while hung — its renewals), ``alive`` (the worker process was running at the heal) and
``held_s`` (freeze to thaw).
"""
from __future__ import annotations

import time
import uuid

from leasecheck.harness.faults.base import Active, Fault, FaultContext, Step
from leasecheck.harness.nemesis.heal import undoes
from leasecheck.harness.run.holders import worker_index

WAIT_S = 2.0          # for a holder to aim at
ANSWER_S = 2.0        # for the worker to say it froze the job

_STDINS: dict[tuple[str, int], object] = {}   # (run dir, worker index) -> that worker's stdin


@undoes("unhang")
def _thaw(entry: dict) -> None:
    """``{"kind": "unhang", "run_dir": D, "worker": I, "slot": "w3.s0"}``: let the slot's job go
    on. Only the harness that hung it can reach the worker; once that harness is gone the worker
    has seen its stdin close and exits by itself, so there is nothing left to undo."""
    stdin = _STDINS.pop((entry["run_dir"], int(entry["worker"])), None)
    if stdin is not None:
        try:
            stdin.write(f"unhang {entry['slot']}\n".encode())
        except (BrokenPipeError, OSError, ValueError):
            pass


class Hang(Fault):
    name = "hang"
    order = 55
    summary = "freeze the holder's job while its process and renewals keep running"
    targets = ("holder",)
    default_target = "holder"
    measures = ("slot", "in_job", "held_through", "calls_during", "alive", "held_s")
    undoes = ("unhang",)

    def start(self, ctx: FaultContext, step: Step) -> Active:
        found = ctx.holders.wait_for_holding_slot(timeout_s=WAIT_S)
        if found is None:
            return Active(step, [], data={"slot": None})
        slot, since = found
        i = worker_index(slot)
        worker = ctx.workers[i]
        ident = ctx.ledger.add({"kind": "unhang", "run_dir": str(ctx.run_dir), "worker": i, "slot": slot})
        _STDINS[(str(ctx.run_dir), i)] = worker.stdin
        token = f"hang-{uuid.uuid4().hex[:12]}"
        before = ctx.holders.slot(slot)
        try:
            worker.stdin.write(f"hang {slot} {token}\n".encode())
        except (BrokenPipeError, OSError):
            pass
        answer = ctx.replies.wait([token], ANSWER_S).get(token) if ctx.replies is not None else None
        return Active(step, [ident], data={"slot": slot, "worker": i, "since": since,
                                           "number": before[2] if before else None,
                                           "in_job": bool(answer and answer[0] == 1)})

    def stop(self, ctx: FaultContext, active: Active) -> dict:
        d = active.data
        if d["slot"] is None:
            return {"slot": None, "in_job": False, "held_through": False, "calls_during": 0,
                    "alive": None, "held_s": 0.0}
        now = ctx.holders.slot(d["slot"])      # before the thaw
        alive = ctx.workers[d["worker"]].poll() is None
        for ident in active.ledger_ids:
            ctx.ledger.heal(ident)
        held = bool(now and now[1] and now[3] == d["since"])
        calls = (now[2] - d["number"]) if now and d["number"] is not None else 0
        return {"slot": d["slot"], "in_job": d["in_job"], "held_through": held, "calls_during": calls,
                "alive": alive, "held_s": round(time.monotonic() - active.started, 4)}
