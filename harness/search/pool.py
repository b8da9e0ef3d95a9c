"""Several runs at once: a pool of at most ``slots`` runs, each carried out in a process of its own
(`leasecheck.harness.search.task`) — on this machine (`LocalPool`, ``--parallel N``) or on the
hosts of a cluster (`leasecheck.harness.search.cluster.ClusterPool`, ``--cluster``).

A pool knows nothing of hunts or matrices: ``submit(job)`` starts a run when a slot is free,
``next()`` blocks until one has ended and says what became of it (`Done`), ``stop(key)`` asks a run
to stop as Ctrl-C would (it keeps its history and is checked). Each run is watched by a thread of
this process, so ``next()`` hears of runs in the order they end.

Nothing is shared between two runs of a pool: each plans its own store on its own free port, its
own run id (the key prefix, the proxy's and container's names), its own run directory (a
timestamp name, taken again when another run took it first) and slot board; ``results/index.html``
is rewritten under a lock (`leasecheck.harness.reports.html.index`).
"""
from __future__ import annotations

import contextlib
import ctypes
import json
import pickle
import queue
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from leasecheck.checkers.result import Part
from leasecheck.harness.search.task import Job

_PR_SET_PDEATHSIG = 1
STDERR_TAIL = 400     # characters of a lost run's stderr kept in its reason


@dataclass(frozen=True)
class Done:
    """What became of one job. ``lost``: no verdict came back — the process or host running it was
    lost — and why, in words (the run is then "not run", never a verdict); ``error``: the harness
    failed (a hunt stops, a matrix cell is CRASHED); else ``run_dir`` holds the checked run."""
    key: str
    run_dir: Path | None = None
    end_reason: str = ""           # "time-limit", "interrupted", "error" (as `Run.end_reason`), "" when lost
    error: str | None = None
    lost: str | None = None
    elapsed_s: float = 0.0
    parts: list | None = None      # (name, `Part`) per property, when the job asked (`Job.parts`)


def _stop_with_parent() -> None:
    """In the child, before it runs: SIGTERM when the thread that started it goes (the caller
    killed): the run then stops as on Ctrl-C, heals its faults and keeps its history."""
    try:
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)
    except OSError:
        pass


def run_child(job: Job, started=lambda proc: None) -> dict:
    """Carry out ``job`` in a new ``python -m leasecheck.harness.search.task`` process and return
    its reply (`task.carry_out`), or ``{"lost": why}`` when it ended without one. ``started(proc)``
    hears the process (to stop it)."""
    with tempfile.TemporaryDirectory(prefix="leasecheck-task-") as tmp:
        reply, err = Path(tmp) / "reply.json", Path(tmp) / "stderr"
        with open(err, "wb") as stderr:
            proc = subprocess.Popen([sys.executable, "-m", "leasecheck.harness.search.task", str(reply)],
                                    stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=stderr,
                                    preexec_fn=_stop_with_parent)
            started(proc)
            try:
                proc.stdin.write(pickle.dumps(job))
                proc.stdin.close()
            except BrokenPipeError:
                pass
            code = proc.wait()
        if reply.is_file():
            return json.loads(reply.read_text(encoding="utf-8"))
        tail = " ".join(err.read_text(encoding="utf-8", errors="replace").split())[-STDERR_TAIL:]
        how = f"signal {signal.Signals(-code).name}" if code < 0 else f"exit code {code}"
        return {"lost": f"its process ended ({how}) before its verdict" + (f": {tail}" if tail else "")}


def done_from(key: str, reply: dict, elapsed_s: float) -> Done:
    if reply.get("lost"):
        return Done(key, lost=reply["lost"], elapsed_s=elapsed_s)
    run_dir = Path(reply["run_dir"]) if reply.get("run_dir") else None
    parts = [(name, Part(**fields)) for name, fields in reply["parts"]] if reply.get("parts") is not None else None
    return Done(key, run_dir, reply.get("end_reason", ""), reply.get("error"), elapsed_s=elapsed_s, parts=parts)


@contextlib.contextmanager
def sigterm_as_ctrl_c():
    """While several runs go, SIGTERM to this process is Ctrl-C: the caller stops every run (each
    keeps its history) instead of dying under them. (Only in the main thread, where signals land.)"""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def interrupt(_signum, _frame):
        raise KeyboardInterrupt
    old = signal.signal(signal.SIGTERM, interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, old)


class Pool:
    """At most ``slots`` runs at once. Subclasses say how one job is carried out (``_execute``, in
    the job's own thread) and how it is stopped (``stop``)."""

    def __init__(self, slots: int):
        self.slots = slots
        self._ended: queue.Queue[Done] = queue.Queue()
        self._running: set[str] = set()

    @property
    def free(self) -> int:
        return self.slots - len(self._running)

    @property
    def running(self) -> int:
        return len(self._running)

    def submit(self, job: Job) -> None:
        if self.free <= 0:
            raise RuntimeError("no free slot: wait for a run to end (next()) first")
        self._running.add(job.key)
        threading.Thread(target=self._watch, args=(job,), daemon=True, name=f"run-{job.key}").start()

    def _watch(self, job: Job) -> None:
        t = time.monotonic()
        try:
            done = self._execute(job)
        except BaseException as e:   # noqa: BLE001 - whatever happened, the caller hears of this job
            done = Done(job.key, lost=f"{type(e).__name__}: {e}", elapsed_s=time.monotonic() - t)
        self._ended.put(done)

    def next(self) -> Done:
        """The next run to end (blocks; Ctrl-C reaches the caller)."""
        if not self._running:
            raise RuntimeError("no run is going")
        done = self._ended.get()
        self._running.discard(done.key)
        return done

    def stop_all(self) -> None:
        for key in list(self._running):
            self.stop(key)

    def drain(self) -> list[Done]:
        """Stop every run still going and wait for each to end."""
        self.stop_all()
        return [self.next() for _ in range(len(self._running))]

    def _execute(self, job: Job) -> Done:
        raise NotImplementedError

    def stop(self, key: str) -> None:
        raise NotImplementedError

    def close(self) -> None:
        """Stop what still runs and release the pool's resources."""
        if self._running:
            self.drain()

    def __enter__(self) -> "Pool":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class LocalPool(Pool):
    """Runs on this machine, each in a child process (``--parallel N``)."""

    def __init__(self, slots: int):
        super().__init__(slots)
        self._procs: dict[str, subprocess.Popen] = {}
        self._stopping: set[str] = set()     # asked to stop before its process started
        self._lock = threading.Lock()

    def _execute(self, job: Job) -> Done:
        t = time.monotonic()

        def started(proc):
            with self._lock:
                self._procs[job.key] = proc
                if job.key in self._stopping:
                    proc.send_signal(signal.SIGTERM)
        try:
            reply = run_child(job, started)
        finally:
            with self._lock:
                self._procs.pop(job.key, None)
                self._stopping.discard(job.key)
        return done_from(job.key, reply, time.monotonic() - t)

    def stop(self, key: str) -> None:
        with self._lock:
            proc = self._procs.get(key)
            if proc is None:
                self._stopping.add(key)
            elif proc is not None and proc.poll() is None:
                proc.send_signal(signal.SIGTERM)     # the run stops as on Ctrl-C and keeps its history
