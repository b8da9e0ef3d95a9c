"""The claim loop against the bare loop in N processes forked from one parent, as a fork server's
workers are: where the workers' CPU per operation goes once many processes share two cores.

    python bench/forked_loops.py --processes 64 [--seconds 10] [--repeat 2] [--modes bare,slot,...]
    python bench/forked_loops.py --processes 64 --seconds 7 --repeat 6 --modes bare,slot,worker --beside

This process imports what the fork server imports (``leasecheck.harness.run.worker`` and the
``token-cas`` lease), starts a store and a ``MONITOR`` reader, freezes its objects out of the
cyclic GC's way (``gc.freeze``, as the fork server does) and forks ``--processes`` children running
one loop each, one mode after the other, ``--repeat`` times. Modes (each is the one before it with
one more part of the worker's recording left out, so the differences are what each part costs):

- ``bare``: ``bench/throughput.py``'s bare redis-py loop (the floor's loop).
- ``slot``: one claim loop built as a worker builds it (``token-cas``, the audited connection, the
  send tracker, the history writer and its flusher, the slot board, the hung-call watch following
  the slot's record), in the process's main thread.
- ``thread``: the same in a thread of its own, as a worker runs its slots.
- ``no-watch``: ``slot`` without the hung-call watch (no watch thread).
- ``no-board``: ``no-watch`` with the slot's record on no board (the same writes, into a private
  buffer instead of the shared map).
- ``no-lines``: ``no-board`` with a history writer whose lines go nowhere (the formatting and the
  flusher's wakes gone; the tracker still numbers and drains).
- ``plain-client``: ``no-lines`` on a plain redis-py client (no numbering, no tracker: the claim
  loop's own steps and the lease over redis-py).
- ``plain-unwritten``: ``plain-client`` with a history writer that keeps nothing as a failed one
  does (its ``failed`` set: the slot's compiled line writer stamps each event and appends nothing),
  instead of ``no-lines``'s Python ``record`` per event: the claim loop's own steps, compiled.
- ``plain-slot``: ``slot`` on a plain redis-py client (nothing numbered, so every ``sent`` is
  empty): what the audited connection's overrides and the numbering cost, as ``slot`` against it.
- ``shared-board``: ``thread`` with every loop's record on one board, as a run's workers share
  one (record ``i`` for the ``i``-th loop; the others each have a board of their own).
- ``worker``: the harness's own worker (``leasecheck.harness.run.worker.main``) in each process,
  from a run directory of this script's (``config.json`` for ``token-cas`` on these keys, one slot,
  job duration and retry delay 0 s, the time limit ``--seconds``; the shared board; the history
  parts), told ``go`` on its stdin as the harness tells it: all a worker builds, without the fork
  server and the harness around it.
- ``bare-lease``: the bare loop building the ``token-cas`` lease for each attempt and calling its
  ``acquire`` and ``release`` (what the lease's own Python code adds to the bare loop's).

With ``--beside``, each mode after the first runs side by side with the first, in one window:
``--processes`` / 2 loops of each, started one of each in turn, each side against a store (and a
``MONITOR`` reader) of its own, so that the store's count of operations is that side's. Both sides
share the machine's state of the moment (its other tenants, how the scheduler has placed the
processes), which moves a loop's CPU per operation by a third within a minute with 64 processes on
two cores, and two runs one after the other do not: the ratio of the two sides' CPU per operation
(``ratio``, the mode's over the first's) is then what the mode adds (the first mode beside itself
reads 0.94–1.12; bench/RESULTS.md, "sixteenth session"). Every other round starts the other side
first. Printed per round: each side's CPU per 1,000 operations (``first_cpu_ms_per_kop``,
``beside_cpu_ms_per_kop``) and operations, which side started first, and the ratio; then per mode
the median ratio (``ratio_median``) and its range. With ``--sessions`` too, every loop of both sides
leads a session of its own (a scheduling group of its own where the kernel's autogroups apply), as
the harness starts its workers.

With ``--beside --other DIR`` the side of the modes after the first runs from another checkout (``git
archive main | tar -x -C DIR``, then ``python setup.py build_ext --inplace`` there): a before and
after of a change at 64 processes in one window, where two invocations one after the other differ
by about 5 %. Each side is then forked from a parent of its own, started from its checkout
(``python DIR/bench/forked_loops.py --side ...``): it imports what the fork server imports, freezes
its objects and forks its loops when told to, both sides at once. ``--modes slot,slot --other DIR``
reads this checkout's claim loop against DIR's. Every line then names the other checkout
(``other``) and its build (``other_build``); the script stops before measuring when the two builds
differ, as ``bench/throughput.py --baseline`` does.

For each mode: the loops' CPU (``/proc/PID/stat``) per 1,000 store operations (``SET`` +
``EVALSHA``, ``INFO commandstats``) over a window of the steady state, the loops' scheduler runs
(``/proc/PID/task/*/schedstat``: every thread's switches in) and minor page faults per 1,000
operations, and the memory of the first eight loops (``/proc/PID/smaps_rollup``, kB: ``Rss``,
``Shared_Dirty`` — pages still shared with the parent and the siblings —, ``Private_Dirty``).
Not a test: read the modes against each other within one invocation (the machine's load moves
the absolute figures). Each line says which build of the hot modules ran (``build``: ``compiled`` or
``pure-python``): figures from two checkouts compare only when it is the same.
"""
from __future__ import annotations

import argparse
import contextlib
import gc
import json
import multiprocessing as mp
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Callable, Iterator

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import redis  # noqa: E402

import leasecheck.harness.run.worker as worker_module  # noqa: E402  (what the fork server imports)
from bench.cpu_window import _cpu_s, memory, minor_faults, store_ops  # noqa: E402
from bench.throughput import bare_loop, build_of, floor_keys, monitor  # noqa: E402
from leasecheck.harness.record import history as history_mod  # noqa: E402
from leasecheck.harness.record.connection import SendTracker, make_client  # noqa: E402
from leasecheck.harness.run.host import default_store_bin  # noqa: E402
from leasecheck.harness.run.hung_watch import HungWatch, stops_of  # noqa: E402
from leasecheck.harness.run.slot_board import FILE as RUN_BOARD, SlotBoard  # noqa: E402
from leasecheck.harness.settings.config import RunConfig  # noqa: E402
from leasecheck.rundir import HISTORY_PARTS  # noqa: E402
from leasecheck.harness.settings.durations import parse_distribution  # noqa: E402
from leasecheck.harness.stores.embedded import EmbeddedStore  # noqa: E402
import leasecheck.workloads.claim_loop as claim_loop_module  # noqa: E402
from leasecheck.workloads.claim_loop import Slot  # noqa: E402
from leasecheck.workloads.leases import load_lease  # noqa: E402
from leasecheck.workloads.stall import Stall  # noqa: E402

MODES = ("bare", "bare-lease", "slot", "thread", "no-watch", "no-board", "no-lines", "plain-client", "plain-unwritten",
         "plain-slot", "shared-board", "worker")
MEMORY = ("Rss", "Shared_Dirty", "Private_Dirty")


class _NoLines:
    """A history writer that keeps nothing: ``record`` and the slot's lines only read the clock.
    (Not a subclass of ``HistoryWriter``: compiled, setup.py, it admits no Python subclass.)"""

    def __init__(self, path):   # no file, no flusher thread
        self.path, self.failed, self.t0_ns = path, None, time.monotonic_ns()

    def now(self) -> int:
        return time.monotonic_ns() - self.t0_ns

    def record(self, process, type, **fields):
        return time.monotonic_ns() - self.t0_ns

    def calls(self, process):
        return history_mod.RecordedCalls(self.record, process)

    def close(self):
        pass


SHARED_BOARD = "slots-shared.bin"


def _slot(d: Path, port: int, keys: list[str], seconds: float, mode: str, index: int = 0,
          processes: int = 1) -> None:
    """One claim loop with the parts ``mode`` leaves in (see the module docstring)."""
    full = mode in ("slot", "thread", "plain-slot", "shared-board")
    history = _NoLines(d) if mode in ("no-lines", "plain-client") else \
        history_mod.HistoryWriter(d / f"w-{os.getpid()}.jsonl")
    if mode == "plain-unwritten":     # as a refused write leaves it: no map for the lines either
        history.failed = OSError("kept nothing")
        history._sink.map(None)
    tracker = SendTracker(f"w{os.getpid()}.s0", on_late=lambda call, entry: None)
    client = redis.Redis(port=port) if mode.startswith("plain-") else make_client(tracker, "127.0.0.1", port)
    board = None
    extra = {}
    if mode == "shared-board":     # one board for every loop, as a run's workers share one
        board = SlotBoard(d / SHARED_BOARD, processes, 1)
        extra["record"] = board.record(index)
        tracker.on_sent = extra["record"].sent
    elif full or mode == "no-watch":
        board = SlotBoard(d / f"slots-{os.getpid()}.bin", 1, 1, create=True)
        extra["record"] = board.record(0)
        tracker.on_sent = extra["record"].sent
    watch = HungWatch(history, 30.0, stops_of(Slot._call)).start() if full else None
    zero = parse_distribution("0s")
    slot = Slot(process=tracker.process, history=history, tracker=tracker, client=client,
                lease_factory=load_lease("token-cas"), keys=keys, ttl_ms=1000, job_duration=zero,
                retry_delay=zero, seed=1, deadline_ns=history.now() + int(seconds * 1e9),
                stop=threading.Event(), stall=Stall(), **extra)
    if watch is not None:
        watch.follow(slot.process, slot.record, slot.current)
    slot.run()
    if watch is not None:
        watch.close()
    history.close()
    if board is not None:
        board.close()


def _bare_lease(port: int, keys: list[str], seconds: float) -> None:
    """``bare_loop``'s commands and keys, through a ``token-cas`` lease built for each attempt."""
    r = redis.Redis(port=port)
    lease = load_lease("token-cas")
    end, i = time.monotonic() + seconds, 0
    while time.monotonic() < end:
        claim = lease(r, keys[i % len(keys)], 1000)
        i += 7
        if claim.acquire():
            claim.release()


def _child(mode: str, port: int, d: str, keys: list[str], seconds: float, session: bool = False,
           index: int = 0, processes: int = 1) -> None:
    if session:   # a session (so a scheduling group) of its own, as the harness starts each worker
        os.setsid()
    if mode == "worker":
        _worker(Path(d) / WORKER_RUN, index, processes)
    elif mode == "bare":
        bare_loop(port, len(keys), seconds, mp.Queue())
    elif mode == "bare-lease":
        _bare_lease(port, keys, seconds)
    elif mode in ("thread", "shared-board"):
        t = threading.Thread(target=_slot, args=(Path(d), port, keys, seconds, mode, index, processes))
        t.start()
        t.join()
    else:
        _slot(Path(d), port, keys, seconds, mode)


WORKER_RUN = "worker-run"


def _worker_run(run: Path, port: int, keys: list[str], seconds: float, processes: int) -> None:
    """The run directory ``worker`` mode's processes read, as the harness would have made it."""
    run.mkdir(exist_ok=True)
    (run / HISTORY_PARTS).mkdir(exist_ok=True)
    RunConfig().with_(lease="token-cas", workers=processes, slots=1, jobs=len(keys), job_duration="0s",
                      retry_delay="0s", time_limit_s=seconds, seed=1, store_host="127.0.0.1",
                      store_port=port, key_prefix=keys[0][:-len("job:0")], run_id="bench").save(run)
    SlotBoard(run / RUN_BOARD, processes, 1, create=True).close()


def _worker(run: Path, index: int, processes: int) -> None:
    """The harness's worker ``index``: "go" on its stdin (a pipe kept open, as the harness keeps
    it), what it prints to /dev/null."""
    r, w = os.pipe()
    os.dup2(r, 0)
    os.close(r)
    os.write(w, f"go {time.monotonic_ns()}\n".encode())
    sys.stdin = open(0, closefd=False)
    null = os.open(os.devnull, os.O_WRONLY)
    os.dup2(null, 1)
    sys.stdout = open(1, "w", closefd=False)
    worker_module.main([str(run), str(index), str(processes)])


def _runs(pid: int) -> int:
    total = 0
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return 0
    for tid in tids:
        try:
            with open(f"/proc/{pid}/task/{tid}/schedstat") as f:
                total += int(f.read().split()[2])
        except OSError:
            pass
    return total


@contextlib.contextmanager
def _stores(dirs: list[Path]) -> Iterator[list[int]]:
    """A store and a ``MONITOR`` reader (its audit in the directory) in each of ``dirs``; yields
    their ports once this process's objects are out of the cyclic GC's way (``gc.freeze``, as the
    fork server leaves its workers); stops them all."""
    stores, monitors, stop = [], [], mp.Event()
    try:
        for d in dirs:
            store = EmbeddedStore(default_store_bin(), d)
            stores.append(store)
            store.start()
            mon = mp.Process(target=monitor, args=(store.host, store.port, str(d / "audit.log"), stop))
            monitors.append(mon)
            mon.start()
        time.sleep(0.5)
        gc.collect()
        gc.freeze()
        yield [store.port for store in stores]
    finally:
        stop.set()
        for mon in monitors:
            mon.join(10)
        for store in stores:
            store.stop()


def _steady(seconds: float) -> tuple[float, float]:
    """(warm-up, window) seconds of a run ``seconds`` long: the window inside the loops' steady state."""
    warmup = min(3.0, seconds * 0.3)
    return warmup, max(1.0, seconds - warmup - 1.5)


def measure(mode: str, processes: int, seconds: float, keys: list[str], d: Path, port: int,
            sessions: bool = False) -> dict:
    if mode == "shared-board":
        SlotBoard(d / SHARED_BOARD, processes, 1, create=True).close()
    if mode == "worker":
        _worker_run(d / WORKER_RUN, port, keys, seconds, processes)
    procs = [mp.Process(target=_child, args=(mode, port, str(d), keys, seconds, sessions, i, processes))
             for i in range(processes)]
    for p in procs:
        p.start()
    client = redis.Redis(port=port)
    warmup, window = _steady(seconds)
    time.sleep(warmup)
    pids = [p.pid for p in procs]
    mem = [memory(pid) for pid in pids[:8]]

    def sample() -> tuple:
        return (sum(_cpu_s(p) for p in pids), sum(_runs(p) for p in pids), sum(minor_faults(p) for p in pids),
                store_ops(client), time.monotonic())
    a = sample()
    time.sleep(window)
    b = sample()
    for p in procs:
        p.join()
    ops = max(1, b[3] - a[3])
    return {"mode": mode, "processes": processes, "sessions": sessions, "ops_per_s": round(ops / (b[4] - a[4])),
            "cpu_ms_per_kop": round(1e6 * (b[0] - a[0]) / ops, 1),
            "runs_per_kop": round(1000 * (b[1] - a[1]) / ops), "minflt_per_kop": round(1000 * (b[2] - a[2]) / ops, 1),
            **{f"{k}_kB": round(statistics.mean(m.get(k, 0) for m in mem)) for k in MEMORY},
            "load_avg_1m": round(os.getloadavg()[0], 1)}


def _prepare(mode: str, d: Path, port: int, keys: list[str], seconds: float, count: int) -> None:
    """What ``count`` loops of ``mode`` read from their side's directory ``d``."""
    if mode == "worker":
        _worker_run(d / WORKER_RUN, port, keys, seconds, count)
    if mode == "shared-board":
        SlotBoard(d / SHARED_BOARD, count, 1, create=True).close()


def _fork_sides(first: str, mode: str, half: int, seconds: float, keys: list[str], sides: list[tuple[Path, int]],
                order: tuple[int, int], sessions: bool = False) -> tuple[list[tuple[int, int]], Callable[[], None], float]:
    """Both sides' loops forked from this process, one of each in turn (``order``'s side first):
    (side, PID) of each, what waits for them all, and when the first was started."""
    for (d, port), m in zip(sides, (first, mode)):
        _prepare(m, d, port, keys, seconds, half)
    procs: list[tuple[int, mp.Process]] = []
    for i in range(half):
        for side in order:
            d, port = sides[side]
            procs.append((side, mp.Process(target=_child, args=((first, mode)[side], port, str(d), keys, seconds,
                                                                 sessions, i, half))))
    begun = time.monotonic()
    for _, p in procs:
        p.start()

    def join() -> None:
        for _, p in procs:
            p.join()
    return [(side, p.pid) for side, p in procs], join, begun


def _side_parents(roots: tuple[Path, Path], first: str, mode: str, half: int, seconds: float, keys: list[str],
                  sides: list[tuple[Path, int]], order: tuple[int, int], sessions: bool = False
                  ) -> tuple[list[tuple[int, int]], Callable[[], None], float]:
    """Each side's loops forked by a parent started from that side's checkout (``--side``), both
    told to fork at once (``order``'s side first): (side, PID) of each loop, what waits for them,
    and when the parents were told."""
    parents: list[tuple[int, subprocess.Popen]] = []
    try:
        for side in order:
            (d, port), root = sides[side], roots[side]
            parents.append((side, subprocess.Popen(
                [sys.executable, str(root / "bench" / "forked_loops.py"), "--side", (first, mode)[side],
                 "--side-port", str(port), "--side-dir", str(d), "--side-count", str(half),
                 "--seconds", str(seconds), "--keys", str(len(keys)), *(["--sessions"] if sessions else [])],
                cwd=root, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)))
        for side, proc in parents:
            assert proc.stdout is not None
            if proc.stdout.readline().strip() != "ready":
                raise SystemExit(f"error: the side parent from {roots[side]} did not start (see its error above)")
        begun = time.monotonic()
        for _, proc in parents:
            assert proc.stdin is not None
            proc.stdin.write("go\n")
            proc.stdin.flush()
        pids = [(side, pid) for side, proc in parents for pid in json.loads(proc.stdout.readline())]  # type: ignore[union-attr]
    except BaseException:
        for _, proc in parents:
            proc.kill()
            proc.wait()
        raise

    def join() -> None:
        for _, proc in parents:
            proc.wait(timeout=seconds + 120)
    return pids, join, begun


def side(mode: str, port: int, d: Path, count: int, seconds: float, keys: list[str], sessions: bool = False) -> None:
    """``--side``: one side of ``--beside --other``, in a parent of its own started from its
    checkout: what ``count`` loops of ``mode`` read prepared, this process's objects frozen out of the
    cyclic GC's way, ``ready`` printed; on ``go`` (stdin) the loops forked, their PIDs printed (a JSON
    list), and waited for."""
    _prepare(mode, d, port, keys, seconds, count)
    gc.collect()
    gc.freeze()
    print("ready", flush=True)
    if sys.stdin.readline().strip() != "go":
        return
    told = time.monotonic()
    procs = []
    for i in range(count):     # each loop runs until ``seconds`` after the word, however long the forking takes
        left = max(1.0, seconds - (time.monotonic() - told))
        procs.append(mp.Process(target=_child, args=(mode, port, str(d), keys, left, sessions, i, count)))
        procs[-1].start()
    print(json.dumps([p.pid for p in procs]), flush=True)
    for p in procs:
        p.join()


def _leads_session(pid: int) -> bool:
    try:
        return os.getsid(pid) == pid
    except OSError:      # gone
        return False


def measure_beside(first: str, mode: str, processes: int, seconds: float, keys: list[str], sides: list[tuple[Path, int]],
                   round_: int, roots: tuple[Path, Path] | None = None, sessions: bool = False) -> dict:
    """``processes`` / 2 loops of ``first`` and as many of ``mode``, started one of each in turn (the
    other side first in odd rounds), each side against its own store (``sides``: a directory and a
    store port each): each side's CPU and operations over one window. With ``roots`` (this
    checkout's and the other's) each side's loops are forked by a parent started from its own."""
    half = processes // 2
    order = (0, 1) if round_ % 2 == 0 else (1, 0)
    # Every loop runs until ``seconds`` after ``begun`` at least (when the first was started, or the
    # side parents told to fork theirs), so the window below ends while all run, however long the
    # forking took.
    if roots is None:
        pids, join, begun = _fork_sides(first, mode, half, seconds, keys, sides, order, sessions)
    else:
        pids, join, begun = _side_parents(roots, first, mode, half, seconds, keys, sides, order, sessions)
    clients = [redis.Redis(port=port) for _, port in sides]
    warmup, window = _steady(seconds)
    time.sleep(max(0.0, begun + warmup - time.monotonic()))
    window = min(window, begun + seconds - 1.0 - time.monotonic())
    if window < 0.5:
        raise SystemExit(f"error: starting the loops took {time.monotonic() - begun:.1f} s of the {seconds:g}; "
                         "give --seconds more")

    def sample() -> tuple[list[float], list[int]]:
        cpu = [0.0, 0.0]
        for side, pid in pids:
            cpu[side] += _cpu_s(pid)
        return cpu, [store_ops(c) for c in clients]
    (cpu0, ops0), t0 = sample(), time.monotonic()
    leading = sum(1 for _, pid in pids if _leads_session(pid))
    time.sleep(window)
    (cpu1, ops1), t1 = sample(), time.monotonic()
    join()
    if any(b < a for a, b in zip(cpu0, cpu1)):      # a loop gone inside the window: its CPU left the sum
        raise SystemExit("error: a loop ended inside the measuring window; give --seconds more")
    ops = [max(1, b - a) for a, b in zip(ops0, ops1)]
    per_kop = [round(1e6 * (cpu1[i] - cpu0[i]) / ops[i], 1) for i in (0, 1)]
    return {"mode": mode, "beside": first, "processes": processes, "sessions": sessions,
            "loops_in_own_session": leading, "round": round_,
            "first_started": ("first", "beside")[order[0]],
            "window_s": round(t1 - t0, 2), "first_ops": ops[0], "beside_ops": ops[1],
            "first_cpu_ms_per_kop": per_kop[0], "beside_cpu_ms_per_kop": per_kop[1],
            "ratio": round(per_kop[1] / per_kop[0], 3), "load_avg_1m": round(os.getloadavg()[0], 1)}


def beside(a: argparse.Namespace, modes: list[str], keys: list[str], build: str, machine: str) -> None:
    """``--beside``: each mode after the first beside the first (``measure_beside``), ``--repeat``
    rounds each, then its median ratio; with ``--other``, the modes after the first from that checkout."""
    roots = None if a.other is None else (ROOT, a.other.resolve())
    named = {} if a.other is None else {"other": str(a.other), "other_build": a.other_build}
    with tempfile.TemporaryDirectory() as tmp:
        dirs = [Path(tmp) / "a", Path(tmp) / "b"]
        for d in dirs:
            d.mkdir()
        with _stores(dirs) as ports:
            sides = list(zip(dirs, ports))
            for mode in modes[1:]:
                ratios = []
                for r in range(a.repeat):
                    got = measure_beside(modes[0], mode, a.processes, a.seconds, keys, sides, r, roots, a.sessions)
                    ratios.append(got["ratio"])
                    print(json.dumps({**got, **named, "build": build, "machine": machine}), flush=True)
                print(json.dumps({"mode": mode, "beside": modes[0], "processes": a.processes, "repeat": a.repeat,
                                  "ratio_median": round(statistics.median(ratios), 3),
                                  "ratio_range": [min(ratios), max(ratios)], **named, "build": build,
                                  "machine": machine}),
                      flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--processes", type=int, default=64)
    ap.add_argument("--seconds", type=float, default=10.0)
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--keys", type=int, default=64)
    ap.add_argument("--modes", default="bare,slot,no-watch,no-board,no-lines,plain-client",
                    help=f"comma-separated, of {', '.join(MODES)}")
    ap.add_argument("--sessions", action="store_true",
                    help="each loop in a session of its own (os.setsid), as the harness starts its workers")
    ap.add_argument("--beside", action="store_true",
                    help="run each mode after the first side by side with the first, half the processes each")
    ap.add_argument("--other", type=Path, metavar="DIR",
                    help="with --beside: run the modes after the first from this other checkout (built the same way)")
    ap.add_argument("--side", help=argparse.SUPPRESS)
    ap.add_argument("--side-port", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--side-dir", type=Path, help=argparse.SUPPRESS)
    ap.add_argument("--side-count", type=int, help=argparse.SUPPRESS)
    a = ap.parse_args()
    keys = floor_keys(a.keys)
    if a.side:
        side(a.side, a.side_port, a.side_dir, a.side_count, a.seconds, keys, a.sessions)
        return
    modes = a.modes.split(",")
    if any(m not in MODES for m in modes) or a.processes < 1 or a.seconds < 5 or a.repeat < 1:
        ap.exit(64, f"error: modes of {', '.join(MODES)}; --processes >= 1, --seconds >= 5, --repeat >= 1\n")
    if a.beside and (a.processes < 2 or a.processes % 2 or len(modes) < 2):
        ap.exit(64, "error: --beside takes an even --processes (half each side) and two modes or more (the first "
                    "is run beside each other one)\n")
    if a.other is not None:
        script = a.other / "bench" / "forked_loops.py"
        if not (a.beside and script.is_file()):
            ap.exit(64, f"error: --other takes --beside and a checkout of leasecheck (with bench/forked_loops.py), "
                        f"not {str(a.other)!r}\n")
        if "--side-count" not in script.read_text():
            ap.exit(64, f"error: {script} predates --other (its loops cannot be forked from a parent of their own); "
                        f"copy this checkout's bench/forked_loops.py there\n")
    machine = f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}"
    # which build of the hot modules this process runs (a copy whose extensions are older than its
    # sources runs the pure-Python ones: leasecheck._pure): compare modes and checkouts of one build
    build = "compiled" if claim_loop_module.__file__.endswith(".so") else "pure-python"
    if a.other is not None:
        a.other_build = build_of(a.other.resolve())
        if a.other_build != build:
            ap.exit(64, f"error: {a.other} runs the {a.other_build} modules and this checkout the {build} ones; "
                        f"build both the same way (`python setup.py build_ext --inplace` in each)\n")
    if a.beside:
        beside(a, modes, keys, build, machine)
        return
    results: dict[str, list[dict]] = {m: [] for m in modes}
    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp)
        with _stores([d]) as (port,):
            for _ in range(a.repeat):
                for mode in modes:
                    results[mode].append(measure(mode, a.processes, a.seconds, keys, d, port, a.sessions))
                    print(json.dumps({**results[mode][-1], "build": build, "machine": machine}), flush=True)
    base = statistics.median(r["cpu_ms_per_kop"] for r in results[modes[0]])
    for mode in modes:
        cpu = [r["cpu_ms_per_kop"] for r in results[mode]]
        print(json.dumps({"mode": mode, "processes": a.processes, "repeat": a.repeat,
                          "cpu_ms_per_kop_median": statistics.median(cpu), "cpu_ms_per_kop_range": [min(cpu), max(cpu)],
                          f"ratio_to_{modes[0]}": round(statistics.median(cpu) / base, 2),
                          "runs_per_kop_median": statistics.median(r["runs_per_kop"] for r in results[mode]),
                          "build": build, "machine": machine}), flush=True)


if __name__ == "__main__":
    main()
