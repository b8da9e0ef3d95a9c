"""Kill the holder's worker — ``kill:holder``: SIGKILL the worker process whose slot holds a claim
now, and at the heal start a replacement worker under a new name (Jepsen's model: a crashed
process never comes back under its old identity; ``w3`` killed, ``w8`` started). The claims its
slots held stay in the store with nobody to release them: how long until another attempt can
claim the job again is the lease's recovery time, and a claim written without an expiry is stuck
there for good.

Aimed like ``pause:holder``: the worker of the slot that claimed last and is not inside
``release()``, waiting up to 2 s (none: a worker at random, ``held`` false); when, once its claim
is on the worker's own file, that slot no longer holds the same claim (its job ended meanwhile),
it aims again within those 2 s. The ledger entry
(``respawn``) is written before the kill; its undo starts the replacement — only the harness that
killed the worker can (a harness killed itself leaves no run to go on).

Measured: ``processes`` (the worker killed, ``["w3"]``), ``pid``, ``exit_code`` (-9: it died of
SIGKILL), ``gone`` (the process was reaped and its PID no longer names it), ``held`` (the slot aimed at
still held the same claim outside ``release()`` when it was killed, as the board, frozen by the
death, says), ``slots`` (its slots that held one), ``attempts`` (the attempts
that died with it: from its own history file, each one inside a lease call or holding a claim at
the kill — its lines are in the file as they are made, and where a writer could not map its file
its last 50 ms may be lost with it, so the kill waits up to 1 s for the file to show the claim the
board says it holds; also written to the history at once
as a ``worker_killed`` event, where their jobs end), ``killed_after_s`` (the SIGKILL, in
seconds after ``fault_start``), ``replacement`` and ``replacement_pid`` (the worker started at the
heal; null when the run was ending).
"""
from __future__ import annotations

import os
import signal
import time

import orjson

from leasecheck.harness.faults.base import Active
from leasecheck.harness.nemesis.heal import undoes
from leasecheck.harness.run.holders import worker_index
from leasecheck.harness.run.host import proc_started
from leasecheck.events import ACQUIRE, FAIL, INFO, INVOKE, OK, RELEASE, TYPE, WORKER_KILLED
from leasecheck.rundir import RunFiles

WAIT_S = 2.0
ON_FILE_S = 1.0     # 20 of the history flusher's 50 ms periods
REAPED_S = 5.0
MEASURES = ("processes", "pid", "exit_code", "gone", "held", "slots", "attempts", "killed_after_s",
            "replacement", "replacement_pid")

_RESPAWN: dict[str, object] = {}      # run dir -> the runner's respawn(), while it runs


def register(run_dir, respawn) -> None:
    """The runner's ``respawn() -> (name, pid) | None``: start a replacement worker."""
    _RESPAWN[str(run_dir)] = respawn


def unregister(run_dir) -> None:
    _RESPAWN.pop(str(run_dir), None)


@undoes("respawn")
def _respawn(entry: dict) -> None:
    """``{"kind": "respawn", "run_dir": D, "worker": "w3"}``: start the replacement of a killed
    worker, when the harness that killed it still runs the run."""
    fn = _RESPAWN.get(entry["run_dir"])
    if fn is not None:
        entry["started"] = fn()


def _pick(ctx, t0: float):
    """(worker index, the holding slot picked and since when it holds, that worker's holding
    slots; None and [] for a worker at random). The slot that claimed last, once its claim is on
    its worker's own file; when by then
    that slot no longer holds the same claim outside ``release()`` (its job ended meanwhile), the
    pick is made again, within ``WAIT_S`` of ``t0`` (then the last pick stands)."""
    while True:
        found = ctx.holders.wait_for_holding_slot(max(0.0, t0 + WAIT_S - time.monotonic()))
        alive = [w for w, p in enumerate(ctx.workers) if p.poll() is None and w not in ctx.killed]   # after the wait
        i = worker_index(found[0]) if found is not None else None
        if i is None or i not in alive:
            return (ctx.rng.choice(alive) if alive else None), None, []
        slots = [p for p, holding in ctx.holders.slots_of(i) if holding]
        # its claim on its own file first: the attempts that die with it are known
        _on_file(RunFiles(ctx.run_dir).part(f"w{i}"), slots, time.monotonic() + ON_FILE_S)
        if ctx.holders.still_holds(*found) or time.monotonic() >= t0 + WAIT_S:
            return i, found, slots


def start(ctx, step):
    t0 = time.monotonic()
    i, found, slots = _pick(ctx, t0)
    if i is None:
        return Active(step, [], data={"worker": None})
    worker = ctx.workers[i]
    entry = {"kind": "respawn", "run_dir": str(ctx.run_dir), "worker": f"w{i}"}
    ident = ctx.ledger.add(entry)
    ctx.killed.add(i)               # before the kill: the runner must not take it for a crash
    started = proc_started(worker.pid)
    killed_at = time.monotonic()
    try:
        os.kill(worker.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    try:
        code = worker.wait(REAPED_S)
    except Exception:
        code = worker.poll()
    gone = code is not None and proc_started(worker.pid) != started
    # Dead, it reports nothing more: the board says what its slot held at the kill.
    held = found is not None and ctx.holders.still_holds(*found)
    ctx.holders.forget(i)
    attempts = died(RunFiles(ctx.run_dir).part(f"w{i}"))
    if ctx.record is not None:      # the history says which attempts died with it, at once
        ctx.record(WORKER_KILLED, worker=f"w{i}", pid=worker.pid, attempts=attempts)
    return Active(step, [ident], data={"worker": i, "pid": worker.pid, "exit_code": code, "gone": gone,
                                       "held": held, "slots": slots, "entry": entry,
                                       "killed_after_s": round(killed_at - t0, 4), "attempts": attempts})


def stop(ctx, active) -> dict:
    d = active.data
    if d["worker"] is None:
        return {k: None for k in MEASURES} | {"processes": [], "gone": False, "held": False}
    for ident in active.ledger_ids:
        ctx.ledger.heal(ident)          # starts the replacement
    replacement = d["entry"].get("started")
    return {"processes": [f"w{d['worker']}"], "pid": d["pid"], "exit_code": d["exit_code"], "gone": d["gone"],
            "held": d["held"], "slots": d["slots"], "attempts": d["attempts"],
            "killed_after_s": d["killed_after_s"],
            "replacement": replacement[0] if replacement else None,
            "replacement_pid": replacement[1] if replacement else None}


def _on_file(path, slots: list[str], deadline: float) -> bool:
    """Wait until ``path`` (a worker's history file) leaves an attempt of each of ``slots``
    (``w3.s0``) open, or ``deadline``.
    The holder aimed at is the slot that claimed last. A worker's lines are in its file as they
    are made (leasecheck.harness.record.history), and a slot marks its claim on the board only
    after its acquire's completion is written, so the first read finds it; but a writer that could
    not map its file keeps its lines in a buffer written every 50 ms, and a SIGKILL then would
    lose the acquire with the buffer — no attempt known to have died, no recovery time measured.
    The file is read again when it has grown, or 50 ms after the last read."""
    size, read_at = -1, 0.0
    while True:
        try:
            now = path.stat().st_size
        except OSError:
            now = -1
        if now != size or time.monotonic() - read_at >= REREAD_S:
            size, read_at = now, time.monotonic()
            open_ = died(path)
            if all(any(a.startswith(f"{slot}.") for a in open_) for slot in slots):
                return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.005)


REREAD_S = 0.05


def died(path) -> list[str]:
    """The attempts a killed worker's history file leaves open: inside a call, or holding a claim
    (an acquire returned true, and no release completed)."""
    open_: dict[str, bool] = {}
    try:
        data = path.read_bytes()
    except OSError:
        return []
    end = data.find(0)      # the file ends at its first zero byte: its writer's reservation
    for line in (data if end < 0 else data[:end]).splitlines():
        try:
            e = orjson.loads(line)
        except orjson.JSONDecodeError:
            continue                    # a torn last line
        attempt, kind, f = e.get("attempt"), e.get(TYPE), e.get("f")
        if not attempt or not f:
            continue
        if kind == INVOKE:
            open_[attempt] = True
        elif f == ACQUIRE and ((kind == OK and e.get("value") is True)):
            open_[attempt] = True
        elif (f == ACQUIRE and kind in (FAIL, INFO)) or (f == RELEASE and kind in (OK, INFO)):
            open_.pop(attempt, None)
    return sorted(open_)
