"""A pause of a worker stops the processes it started with it — an ``exec:`` lease's child per
slot — each with an undo entry of its own, and continues them all when it ends; the runner ends
what is left of a worker's process group."""
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

from leasecheck.harness.faults.base import FaultContext, Step
from leasecheck.harness.faults.pause import Pause
from leasecheck.harness.nemesis.heal import Ledger
from leasecheck.harness.run.procfs import descendants, proc_state
from leasecheck.harness.run.runner import _end_group

# A stand-in worker: starts two children (one of which starts a grandchild), prints their pids.
WORKER = """
import subprocess, sys, time
kids = [subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"]),
        subprocess.Popen([sys.executable, "-c",
                          "import subprocess, sys, time; subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)']); time.sleep(60)"])]
print(" ".join(str(k.pid) for k in kids), flush=True)
time.sleep(60)
"""


def _sleeper(pid: int) -> bool:
    """Whether ``pid`` runs the plain sleeper's code, i.e. has exec'd it. A child forked by
    ``subprocess`` (vfork) shows its parent's command line until it execs; stopped before that,
    it keeps its parent waiting in state D, never T."""
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[-2] == b"import time; time.sleep(60)"
    except (OSError, IndexError):
        return False


def _worker():
    w = subprocess.Popen([sys.executable, "-c", WORKER], stdout=subprocess.PIPE, text=True, start_new_session=True)
    kids = [int(p) for p in w.stdout.readline().split()]
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:   # the grandchild started and exec'd (2 plain sleepers of 3)
        found = descendants(w.pid)
        if len(found) == 3 and sum(_sleeper(p) for p in found) == 2:
            break
        time.sleep(0.02)
    return w, kids


def _wait_state(pids, state, timeout=5.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if all(proc_state(p) == state for p in pids):
            return True
        time.sleep(0.02)
    return False


def test_descendants_are_children_and_theirs():
    w, kids = _worker()
    try:
        found = descendants(w.pid)
        assert set(kids) <= set(found) and len(found) == 3
        assert descendants(kids[0]) == []
    finally:
        _end_group(w.pid)
        w.wait(5)


def test_a_paused_worker_is_stopped_with_its_children_and_continued_with_them(tmp_path):
    w, _ = _worker()
    try:
        everyone = [w.pid, *descendants(w.pid)]
        ledger = Ledger(tmp_path)
        ctx = FaultContext(cfg=SimpleNamespace(), run_dir=tmp_path, ledger=ledger, workers=[w],
                           holders=SimpleNamespace(), rng=random.Random(1))
        fault = Pause()
        active = fault.start(ctx, Step(at=0, fault="pause", target="worker", duration=0.3))
        assert _wait_state(everyone, "T")
        assert sorted(e["pid"] for e in ledger.pending()) == sorted(everyone)   # an undo entry each
        time.sleep(0.3)
        measured = fault.stop(ctx, active)
        assert measured["processes"] == ["w0"] and measured["stopped_s"] > 0.1
        assert ledger.pending() == []
        assert _wait_state(everyone, "S")
    finally:
        _end_group(w.pid)
        w.wait(5)


def test_the_runner_ends_what_is_left_of_a_killed_workers_group():
    w, _ = _worker()
    left = descendants(w.pid)
    os.kill(w.pid, signal.SIGKILL)
    w.wait(5)
    assert all(proc_state(p) not in (None, "Z") for p in left)   # orphans, still running
    _end_group(w.pid)
    deadline = time.monotonic() + 5
    while any(proc_state(p) not in (None, "Z") for p in left) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert all(proc_state(p) in (None, "Z") for p in left)
