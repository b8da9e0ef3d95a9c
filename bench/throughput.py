"""How many lease operations per second a leasecheck run reaches, as a ratio to the floor
measured in the same run: a bare redis-py loop sending the same commands (SET NX PX, then a Lua
compare-and-delete when it wins, on keys of the shape a run gives its own: ``FLOOR_PREFIX``) from
as many processes, against the same kind of store, with a MONITOR reader attached — the audit's
unavoidable cost is in the floor.

    python bench/throughput.py [--workers 4,16,64] [--seconds 10] [--keys 64] [--repeat 3]
    python bench/throughput.py --workers 4
    python bench/throughput.py --workers 4 --redlock 5    # also redlock on 5 masters, audited each
    python bench/throughput.py --workers 4 --wire         # also the same lease on the wire path
    python bench/throughput.py --workers 64 --floor-sessions   # each floor loop a session of its own
    python bench/throughput.py --workers 64 --beside --repeat 3   # harness and floor at once, half each
    python bench/throughput.py --workers 4 --beside --baseline DIR --repeat 4   # this harness beside DIR's

With ``--wire`` it also runs the same lease on the wire path (``bench/wire_lease.py``: ``token-cas``
on a redis-py client the lease builds from its slot's URL, so every command goes through the
slot's forwarding port; ``--wire TokenCasUrlPerAttempt``: a new client for every attempt) right
after each harness run, and prints ``wire_ratio_to_redis_py``: its
lease operations per second over the redis-py path's (the store's count over the same steady
window), and ``wire_cpu_ratio``: the redis-py path's CPU per operation over the wire path's.

With ``--baseline DIR`` it also runs the harness from another checkout (``git archive main |
tar -x -C DIR``, then ``python setup.py build_ext --inplace`` there) beside this one's, against
the same floors, and prints a summary line for it (``"of"``): a before and after in one invocation.
Every line says which build of the hot modules each side runs (``build``, ``baseline_build``:
``compiled`` or ``pure-python``), and it stops before measuring when the two differ: a copy whose
compiled extensions are older than its sources runs the pure-Python modules (``leasecheck._pure``).

With ``--redlock N`` it also runs the ``redlock`` lease on ``--topology redlock --nodes N`` (one
audit per master) and prints ``redlock_ratio_to_single``: its lease operations per second over
the single-store harness run's, measured in the same invocation.

Two ratios per worker count. ``ratio_to_floor``: harness ops/s / floor ops/s (wall clock, both
counted by the store over a window of the steady state: the floor's processes start one by one and
the harness's run also spends time starting and stopping its workers; ``ops_per_s`` on each
measurement's own line is the whole run's).
``cpu_ratio``: the floor's CPU per operation / the harness's, where CPU is that of every process
involved (floor: loop processes + MONITOR reader process + redis-server; harness: the harness
process, its workers and redis-server), over a steady-state window with operations counted by the
store. On a shared machine wall-clock throughput swings 2-3x with others' load; CPU per operation
much less. Each measurement also gives what makes the two ratios differ: ``idle_share``, the share
of the machine's CPU time left idle over the window, ``steal_share``, the share the hypervisor
gave to something else while this machine's CPUs had work (``/proc/stat``'s steal: another
tenant's load, which moves both sides), and ``store_wait_share``, the share of the
window the store was runnable but waiting for a CPU (the summary: each side's median, ``floor_...``
and ``harness_...``); and per role, per 1,000 operations, where the CPU went (``per_kop_by_role``:
user and system time, the threads' sleeps and preemptions, minor page faults; ``bench/cpu_window.py``). With ``--repeat N`` floor and harness alternate N times; the summary gives the best
of each side (``ratio_to_floor``: best harness over best floor), the range of the pairs' ratios
and their median (``ratio_median``, ``cpu_ratio_median``). Each line also gives ``group_nice``, the
nice value of this session's scheduling group (``/proc/self/autogroup``): the floor's processes run
in it and the harness's workers each in a group of their own, so anything but 0 weighs one side
against the other, and the script warns.

Every other round (with ``--repeat`` 2 or more) runs its measurements in the reverse order: the
harness first and the floor last, and with ``--baseline`` the other checkout's harness before this
one's. Each line says its ``round`` and its ``place`` in it (0 first). Which run comes right after
which moves a harness run by about 5 % (bench/RESULTS.md, "fifteenth session"), so alternating keeps
that out of the comparison of the sides' best runs and of the pairs' medians.

With ``--beside`` it measures neither side alone: a harness run with half the workers and a floor
with half the loops run at once, each against its own store, over one window (``measure_beside``;
each floor loop then leads a session of its own, as each worker does, so that both sides' processes
meet the scheduler alike).
The floor and the harness run one after the other otherwise, and on a shared machine a loop's CPU
per operation moves by half within minutes at 64 workers; side by side both sides meet the same
state, and ``cpu_ratio`` (the floor's CPU per operation over the harness's, every process of each
side counted as above) is what the harness costs in it. Operations per second mean nothing there
(the two sides share the CPUs as the scheduler's groups decide), so only CPU is compared; per round
and then the median of ``--repeat`` rounds (``cpu_ratio_median``). The side started first costs
more per operation, so every other round the floor starts first (each line's ``first``), and the
summary also gives the median of each order's rounds (``cpu_ratio_by_first``): give an even
``--repeat``.

With ``--beside --baseline DIR`` the two sides are this checkout's harness and the other checkout's,
half the workers each, at once (``measure_beside_baseline``; every other round the baseline's run
starts first): ``baseline_cpu_ratio``, the baseline's CPU per operation over this checkout's, every
process of each run counted, per round and its median. A before and after of a change to any part
of a run (its store's work, its audit and progress, its workers), where two runs one after the
other differ by 5 % and more.

With ``--floor-sessions`` each floor loop starts a session of its own (``os.setsid``), as the
harness starts each worker; each floor line says how many loops led one (``loops_in_own_session``).
Where the kernel's autogroups apply (a process in the root CPU cgroup: ``/proc/self/autogroup``
names a group), a session is a scheduling group, so the layout decides how the scheduler splits
the two cores between the loops and the store: at 64 loops, one group each cut the floor by about a
third (bench/RESULTS.md, "fourteenth session"). In a CPU cgroup of its own (CI's machines, a
container) the file reads empty and the layout changes nothing. The issue's floor is the default. Not a test: absolute numbers depend on the machine (machines of one kind differ
3x); the ratios much less.
"""
from __future__ import annotations

import argparse
import contextlib
import statistics
import glob
import json
import multiprocessing as mp
import os
import platform
import secrets
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Callable, Iterator

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import redis  # noqa: E402

from bench.cpu_window import group_nice, measure_window, wait_started  # noqa: E402
from leasecheck.harness.run.host import default_store_bin  # noqa: E402
from leasecheck.harness.run.procfs import proc_state  # noqa: E402
from leasecheck.harness.stores.embedded import EmbeddedStore  # noqa: E402
from leasecheck.protocol import key_prefix  # noqa: E402
from leasecheck.workloads.leases.scripts import COMPARE_AND_DELETE  # noqa: E402

# The floor's keys have the shape of a run's (``leasecheck.protocol.key_prefix`` of an 8-character
# run id, then ``job:N``), so the floor sends the harness's commands byte for byte in length: the
# store formats every argument of every command for its MONITOR reader, and the audit copies it, so
# a longer key costs both more per operation (bench/RESULTS.md, "eighteenth session").
FLOOR_PREFIX = key_prefix("f" * 8)


def floor_keys(count: int) -> list[str]:
    """The floor's ``count`` job keys, as a run of ``--jobs count`` names its own."""
    return [f"{FLOOR_PREFIX}job:{i}" for i in range(count)]


def bare_loop(port: int, keys: int, seconds: float, out: mp.Queue, session: bool = False) -> None:
    if session:     # a session, so a scheduling group, of its own: as the harness starts each worker
        os.setsid()
    r = redis.Redis(port=port)
    release = r.register_script(COMPARE_AND_DELETE)
    names = floor_keys(keys)
    ops = 0
    end = time.monotonic() + seconds
    i = 0
    while time.monotonic() < end:
        key = names[i % keys]
        i += 7
        token = secrets.token_hex(16)
        ops += 1
        if r.set(key, token, nx=True, px=1000):
            release(keys=[key], args=[token])
            ops += 1
    out.put((ops, os.getsid(0) == os.getpid()))     # and whether it leads a session of its own


def monitor(host: str, port: int, path: str, stop) -> None:
    """The floor's MONITOR reader, in its own process so its CPU is counted like the loops'."""
    from leasecheck.harness.record.audit import MonitorRecorder

    mon = MonitorRecorder(host, port, Path(path))
    mon.start()
    stop.wait()
    mon.close()


def _window(seconds: float) -> tuple[float, float]:
    warmup = min(1.5, seconds * 0.15)
    return warmup, max(1.0, seconds - warmup - 1.0)


@contextlib.contextmanager
def _floor(workers: int, keys: int, seconds: float, with_monitor: bool, sessions: bool = False
           ) -> Iterator[tuple[dict[int, str], redis.Redis, Callable[[], tuple[int, int]]]]:
    """The floor running: a store, its ``MONITOR`` reader and ``workers`` bare loops of ``seconds``.
    Yields the roles of its processes, a client of its store, and what waits for the loops and
    returns (operations, loops that led a session of their own); stops the store and the reader."""
    with tempfile.TemporaryDirectory() as d:
        store = EmbeddedStore(default_store_bin(), Path(d))
        store.start()
        mon, stop = None, mp.Event()
        try:
            if with_monitor:
                mon = mp.Process(target=monitor, args=(store.host, store.port, str(Path(d) / "audit.log"), stop))
                mon.start()
                time.sleep(0.5)
            q: mp.Queue = mp.Queue()
            procs = [mp.Process(target=bare_loop, args=(store.port, keys, seconds, q, sessions))
                     for _ in range(workers)]
            for p in procs:
                p.start()

            def finish() -> tuple[int, int]:
                counts = [q.get() for _ in procs]
                for p in procs:
                    p.join()
                return sum(ops for ops, _ in counts), sum(1 for _, leads in counts if leads)
            roots = {**{p.pid: "loops" for p in procs}, store.proc.pid: "store", **({mon.pid: "monitor"} if mon else {})}
            yield roots, redis.Redis(host=store.host, port=store.port), finish
        finally:
            if mon:
                stop.set()
                mon.join(10)
            store.stop()


def _floor_what(with_monitor: bool, sessions: bool) -> str:
    return ("bare redis-py loop" + (" + MONITOR reader" if with_monitor else "")
            + (", each loop a session of its own" if sessions else ""))


def measure_bare(workers: int, keys: int, seconds: float, with_monitor: bool, sessions: bool = False) -> dict:
    with _floor(workers, keys, seconds, with_monitor, sessions) as (roots, client, finish):
        win = measure_window(roots, client, *_window(seconds))
        total, own = finish()
    return {"what": _floor_what(with_monitor, sessions),
            "loops_in_own_session": own, "workers": workers, "keys": keys, "seconds": seconds, "ops_per_s": round(total / seconds), **win}


def _store_port(results_dir: str, timeout_s: float = 60.0) -> int:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        for path in glob.glob(os.path.join(results_dir, "*", "*", "config.json")):
            try:
                return int(json.loads(Path(path).read_text())["store_port"])
            except (ValueError, KeyError, TypeError, OSError):
                pass
        time.sleep(0.05)
    raise RuntimeError("the run wrote no config.json")


WIRE_LEASES = ("TokenCasUrl", "TokenCasUrlPerAttempt")   # bench/wire_lease.py


def _harness_cmd(workers: int, keys: int, seconds: float, results: str, redlock_nodes: int = 0, wire: str = "") -> list[str]:
    lease = ["--lease", "redlock", "--topology", "redlock", "--nodes", str(redlock_nodes)] if redlock_nodes \
        else ["--lease", f"bench/wire_lease.py:{wire}" if wire else "token-cas"]
    return [sys.executable, "-m", "leasecheck", "run", *lease, "--workers", str(workers),
            "--jobs", str(keys), "--job-duration", "0s", "--retry-delay", "0s",
            "--time-limit", f"{seconds}s", "--results-dir", results, "--seed", "1"]


@contextlib.contextmanager
def _harness(workers: int, keys: int, seconds: float, root: Path = ROOT, wire: str = ""
             ) -> Iterator[tuple[subprocess.Popen, redis.Redis, str]]:
    """A ``leasecheck run`` of ``token-cas`` (on the wire path with ``wire``) running, from checkout
    ``root``: yields its process, a client of its store and its results directory; waits for it to
    end (ended on an error)."""
    with tempfile.TemporaryDirectory() as d:
        with subprocess.Popen(_harness_cmd(workers, keys, seconds, d, wire=wire), cwd=root, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL) as proc:
            try:
                yield proc, redis.Redis(port=_store_port(d)), d
                proc.wait(timeout=seconds + 300)
            except BaseException:
                proc.terminate()
                raise


def _harness_what(redlock_nodes: int = 0, wire: str = "", root: Path = ROOT) -> str:
    return (f"leasecheck run (redlock on {redlock_nodes} masters, history + an audit per master)" if redlock_nodes
            else f"leasecheck run (token-cas on the wire path, {wire}, history + audit)" if wire
            else "leasecheck run (token-cas, history + audit)") + (f", from {root}" if root != ROOT else "")


def measure_harness(workers: int, keys: int, seconds: float, redlock_nodes: int = 0, wire: str = "",
                    root: Path = ROOT) -> dict:
    win = {}
    if redlock_nodes:   # lease operations from results.json only: the store counts per master
        with tempfile.TemporaryDirectory() as d:
            subprocess.run(_harness_cmd(workers, keys, seconds, d, redlock_nodes), cwd=root, capture_output=True,
                           text=True, timeout=seconds + 300)
            res = json.loads((Path(d) / "latest" / "results.json").read_text())
    else:
        with _harness(workers, keys, seconds, root, wire) as (proc, client, d):
            win = measure_window({proc.pid: "harness"}, client, *_window(seconds))
            proc.wait(timeout=seconds + 300)
            res = json.loads((Path(d) / "latest" / "results.json").read_text())
    return {"what": _harness_what(redlock_nodes, wire, root), "workers": workers, "keys": keys,
            "seconds": seconds, "ops_per_s": round(res["ops"] / res["duration_s"]),
            "valid": res["valid"], **win}


def measure_beside(workers: int, keys: int, seconds: float, first: str = "harness") -> dict:
    """``--beside``: a harness run of ``workers`` / 2 workers and a floor of as many bare loops (with
    its ``MONITOR`` reader) at once, each against its own store, measured over the same window: the
    CPU per operation of each side in the same state of the machine (``cpu_ratio``: the floor's over
    the harness's). ``first`` (``"harness"`` or ``"floor"``) starts first, the other once its store
    runs lease commands, and both windows begin after the same warm-up. The side started first runs
    on past the window: the harness is stopped once it is over, the floor's loops run ``FLOOR_LEAD_S``
    longer, time for a harness to start beside them. (Which side starts first moves a side's CPU per
    operation by several per cent: of two harness runs of one checkout side by side at 64 workers,
    the one started first took about 6 % more, bench/RESULTS.md, "eighteenth session".)
    Each floor loop leads a session of its own, as each worker does: where a session is a scheduling
    group (the kernel's autogroups), the side with fewer groups gets a smaller share of the CPUs, runs
    each process less often and so colder, and costs more per operation (one group of loops beside
    eight workers' groups took 1.7-1.8 times the workers' CPU per operation: bench/RESULTS.md)."""
    half = workers // 2
    with contextlib.ExitStack() as stack:
        if first == "harness":
            proc, hclient, _d = stack.enter_context(_harness(half, keys, seconds + 60, ROOT))
            wait_started(hclient)
            roots, fclient, finish = stack.enter_context(_floor(half, keys, seconds, True, sessions=True))
            wait_started(fclient)
        else:
            roots, fclient, finish = stack.enter_context(_floor(half, keys, seconds + FLOOR_LEAD_S, True, sessions=True))
            wait_started(fclient)
            proc, hclient, _d = stack.enter_context(_harness(half, keys, seconds + 2, ROOT))
            wait_started(hclient)
        # both stores run lease commands: the two windows begin together
        floor, harness = _windows_at_once(seconds, (roots, fclient), ({proc.pid: "harness"}, hclient))
        _still_running({"harness": proc})
        if first == "floor" and any(proc_state(pid) in (None, "Z") for pid, role in roots.items() if role == "loops"):
            raise RuntimeError("the floor's loops ended inside the measured window")
        _, own = finish()
        if proc.poll() is None:
            proc.terminate()    # its window is over: the rest of its run is not measured
    return {"what": "beside", "workers": workers, "each_side": half, "keys": keys, "seconds": seconds,
            "first": first, "floor_loops_in_own_session": own,
            "floor_cpu_ms_per_kop": floor["cpu_ms_per_kop"], "harness_cpu_ms_per_kop": harness["cpu_ms_per_kop"],
            "cpu_ratio": round(floor["cpu_ms_per_kop"] / harness["cpu_ms_per_kop"], 3),
            "floor_window_ops": floor["window_ops"], "harness_window_ops": harness["window_ops"],
            "floor_cpu_ms_per_kop_by_role": floor["cpu_ms_per_kop_by_role"],
            "harness_cpu_ms_per_kop_by_role": harness["cpu_ms_per_kop_by_role"],
            "floor_window_s": floor["window_s"], "harness_window_s": harness["window_s"],
            "load_avg_1m": round(os.getloadavg()[0], 2)}


FLOOR_LEAD_S = 30.0   # how much longer the floor's loops run when they start first


def _windows_at_once(seconds: float, *sides: tuple[dict[int, str], redis.Redis]) -> list[dict]:
    """``measure_window`` of each side (its roles, a client of its store), all over one window:
    each in a thread, so an error in any is raised rather than lost."""
    with ThreadPoolExecutor(len(sides)) as pool:
        windows = [pool.submit(measure_window, roots, client, *_window(seconds)) for roots, client in sides]
        return [w.result() for w in windows]


def _still_running(runs: dict[str, subprocess.Popen]) -> None:
    """Each harness run still going once its window is over (``RuntimeError`` naming one that
    ended inside it: its workers' CPU would count as nothing)."""
    for name, proc in runs.items():
        if proc.poll() is not None:
            raise RuntimeError(f"the {name} run ended (exit {proc.returncode}) inside the measured window")


def measure_beside_baseline(workers: int, keys: int, seconds: float, baseline: Path, first: str) -> dict:
    """``--beside --baseline DIR``: a harness run of ``workers`` / 2 workers from this checkout and
    one from ``baseline`` at once, each against its own store, over one window: a before and after
    of a change in the same state of the machine, every process of each run counted (its store, its
    audit and progress, its workers). ``first``: which run starts first (``"this"`` or
    ``"baseline"``); the other starts once the first's store runs lease commands, and both windows
    begin after the same warm-up. ``baseline_cpu_ratio``: the baseline's CPU per operation over
    this checkout's (above 1, this checkout costs less)."""
    half = workers // 2
    roots = {"this": ROOT, "baseline": baseline}
    second = "baseline" if first == "this" else "this"
    # The first run's time limit leaves room for the second to start: under the first's load a
    # harness takes seconds to start its workers, and a run that ends inside the window would
    # count its workers' CPU as nothing (ended in time, it is stopped once the window is over).
    with _harness(half, keys, seconds + 60, roots[first]) as (proc_a, client_a, _da):
        wait_started(client_a)
        with _harness(half, keys, seconds + 2, roots[second]) as (proc_b, client_b, _db):
            wait_started(client_b)
            window_a, window_b = _windows_at_once(seconds, ({proc_a.pid: "harness"}, client_a),
                                                  ({proc_b.pid: "harness"}, client_b))
            got = {first: window_a, second: window_b}
            _still_running({first: proc_a, second: proc_b})
        proc_a.terminate()   # its window is over: the rest of its run is not measured
    this, base = got["this"], got["baseline"]
    return {"what": "beside-baseline", "workers": workers, "each_side": half, "keys": keys, "seconds": seconds,
            "first": first, "baseline": str(baseline),
            "this_cpu_ms_per_kop": this["cpu_ms_per_kop"], "baseline_cpu_ms_per_kop": base["cpu_ms_per_kop"],
            "baseline_cpu_ratio": round(base["cpu_ms_per_kop"] / this["cpu_ms_per_kop"], 3),
            "this_window_ops": this["window_ops"], "baseline_window_ops": base["window_ops"],
            "this_cpu_ms_per_kop_by_role": this["cpu_ms_per_kop_by_role"],
            "baseline_cpu_ms_per_kop_by_role": base["cpu_ms_per_kop_by_role"],
            "load_avg_1m": round(os.getloadavg()[0], 2)}


_BUILD_OF = (
    "import os; from pathlib import Path; import leasecheck._pure as p; "
    "g = p.groups() if hasattr(p, 'groups') else list(Path(p.__file__).parent.glob(p.GROUP + '.*so')); "
    "print('pure-python' if os.environ.get(p.VARIABLE) or not g or p.stale(p.halves()) else 'compiled')")


def build_of(root: Path) -> str:
    """Which build of the hot modules a run from checkout ``root`` uses: ``compiled`` (its mypyc
    extensions there and newer than their sources) or ``pure-python`` (``leasecheck._pure``)."""
    out = subprocess.run([sys.executable, "-c", _BUILD_OF], cwd=root, capture_output=True, text=True,
                         timeout=60)
    return out.stdout.strip() or "unknown"


def _span(values: list[float], digits: int = 3) -> list[float]:
    return [round(min(values), digits), round(max(values), digits)]


def summarize(workers: int, floors: list[dict], harnesses: list[dict]) -> dict:
    """Best of each side (highest ops/s, lowest CPU per operation), and the ranges of the ratios
    of each floor/harness pair measured back to back."""
    wall = [h["window_ops_per_s"] / f["window_ops_per_s"] for f, h in zip(floors, harnesses)]
    cpu = [f["cpu_ms_per_kop"] / h["cpu_ms_per_kop"] for f, h in zip(floors, harnesses)]
    best_floor = max(f["window_ops_per_s"] for f in floors)
    best_harness = max(h["window_ops_per_s"] for h in harnesses)
    floor_cpu = min(f["cpu_ms_per_kop"] for f in floors)
    harness_cpu = min(h["cpu_ms_per_kop"] for h in harnesses)
    return {"workers": workers, "repeat": len(floors),
            "floor_ops_per_s": best_floor, "harness_ops_per_s": best_harness,
            "ratio_to_floor": round(best_harness / best_floor, 3), "ratio_range": _span(wall),
            "ratio_median": round(statistics.median(wall), 3),
            "floor_cpu_ms_per_kop": floor_cpu, "harness_cpu_ms_per_kop": harness_cpu,
            "cpu_ratio": round(floor_cpu / harness_cpu, 3), "cpu_ratio_range": _span(cpu),
            "cpu_ratio_median": round(statistics.median(cpu), 3),
            **_medians("idle_share", floors, harnesses), **_medians("store_wait_share", floors, harnesses),
            "load_avg_1m": round(os.getloadavg()[0], 2)}


def _medians(field: str, floors: list[dict], harnesses: list[dict]) -> dict:
    """``floor_<field>`` and ``harness_<field>``: the median of each side's measurements."""
    out = {}
    for side, runs in (("floor", floors), ("harness", harnesses)):
        values = [r[field] for r in runs if r.get(field) is not None]
        out[f"{side}_{field}"] = round(statistics.median(values), 3) if values else None
    return out


def summarize_wire(workers: int, harnesses: list[dict], wires: list[dict]) -> dict:
    """The wire path against the redis-py path, each pair run back to back: the best of each
    side, and the range of the pairs' ratios."""
    wall = [w["window_ops_per_s"] / h["window_ops_per_s"] for h, w in zip(harnesses, wires)]
    cpu = [h["cpu_ms_per_kop"] / w["cpu_ms_per_kop"] for h, w in zip(harnesses, wires)]
    best_py = max(h["window_ops_per_s"] for h in harnesses)
    best_wire = max(w["window_ops_per_s"] for w in wires)
    py_cpu = min(h["cpu_ms_per_kop"] for h in harnesses)
    wire_cpu = min(w["cpu_ms_per_kop"] for w in wires)
    return {"workers": workers, "repeat": len(wires), "wire_lease": wires[0]["what"].split(", ")[1],
            "redis_py_ops_per_s": best_py, "wire_ops_per_s": best_wire,
            "wire_ratio_to_redis_py": round(best_wire / best_py, 3), "wire_ratio_range": _span(wall),
            "redis_py_cpu_ms_per_kop": py_cpu, "wire_cpu_ms_per_kop": wire_cpu,
            "wire_cpu_ratio": round(py_cpu / wire_cpu, 3), "wire_cpu_ratio_range": _span(cpu),
            "wire_valid": all(w["valid"] is True for w in wires), "load_avg_1m": round(os.getloadavg()[0], 2)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workers", default="4,16,64", help="one count or several, comma-separated")
    ap.add_argument("--seconds", type=float, default=10.0)
    ap.add_argument("--keys", type=int, default=64)
    ap.add_argument("--repeat", type=int, default=1, help="floor and harness alternate this many times")
    ap.add_argument("--floor-sessions", action="store_true",
                    help="each floor loop in a session of its own (os.setsid), as the harness starts its workers")
    ap.add_argument("--plain", action="store_true", help="also measure the bare loop without MONITOR")
    ap.add_argument("--wire", nargs="?", const=WIRE_LEASES[0], default="", choices=WIRE_LEASES,
                    help="also run the lease on the wire path and compare it with the redis-py path "
                         "(bench/wire_lease.py's class: one client per slot, the default, or per attempt)")
    ap.add_argument("--baseline", type=Path, metavar="DIR",
                    help="also run the harness from another checkout (git archive of main, say), "
                         "beside this one's (right after it; before it every other round), and print its ratios too")
    ap.add_argument("--redlock", type=int, default=0, metavar="N",
                    help="also run the redlock lease on N masters and compare it with the single-store run")
    ap.add_argument("--beside", action="store_true",
                    help="instead: the harness with half the workers and the floor with half the loops at once, "
                         "their CPU per operation over one window (with --baseline: this checkout's harness and "
                         "the baseline's at once)")
    a = ap.parse_args()
    try:
        counts = [int(x) for x in a.workers.split(",")]
    except ValueError:
        ap.exit(64, f"error: --workers takes counts like 4 or 4,16,64, not {a.workers!r}\n")
    if a.repeat < 1 or a.seconds < 3 or min(counts) < 1:
        ap.exit(64, "error: give --repeat >= 1, --seconds >= 3 and worker counts >= 1\n")
    if a.baseline is not None and not (a.baseline / "leasecheck" / "__main__.py").is_file():
        ap.exit(64, f"error: --baseline takes a checkout of leasecheck (with leasecheck/__main__.py), "
                    f"not {str(a.baseline)!r}\n")
    if a.beside and (any(c % 2 for c in counts) or a.wire or a.redlock or a.plain or a.floor_sessions):
        ap.exit(64, "error: --beside takes even worker counts (half each side) and none of --wire, "
                    "--redlock, --plain, --floor-sessions\n")
    builds = {"build": build_of(ROOT)}
    if a.baseline is not None:
        # a copy whose extensions are older than its sources runs the pure-Python modules: compared
        # with a compiled checkout, that measures the build, not the change
        builds["baseline_build"] = build_of(a.baseline.resolve())
        if builds["baseline_build"] != builds["build"]:
            ap.exit(64, f"error: the baseline runs the {builds['baseline_build']} modules and this checkout the "
                        f"{builds['build']} ones; build both the same way (`python setup.py build_ext --inplace` "
                        f"in each, or LEASECHECK_PURE_PYTHON=1 for both)\n")
    nice = group_nice()
    if nice:    # the floor's loops run in this session's group, the harness's workers in their own
        print(f"warning: this session's scheduling group runs at nice {nice} (/proc/self/autogroup), the harness's "
              f"workers' groups at 0: the ratios compare unequal shares; `echo 0 > /proc/self/autogroup` first",
              file=sys.stderr)
    machine = {"machine": f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}",
               **builds, "group_nice": nice}
    if a.beside:
        what, name = ("beside-baseline", "baseline_cpu_ratio") if a.baseline is not None else ("beside", "cpu_ratio")
        for workers in counts:
            ratios, by_first = [], {}
            for i in range(a.repeat):
                if a.baseline is not None:   # every other round the baseline's run starts first
                    got = measure_beside_baseline(workers, a.keys, a.seconds, a.baseline.resolve(),
                                                  "this" if i % 2 == 0 else "baseline")
                else:   # every other round the floor starts first
                    got = measure_beside(workers, a.keys, a.seconds, "harness" if i % 2 == 0 else "floor")
                ratios.append(got[name])
                by_first.setdefault(got["first"], []).append(got[name])
                print(json.dumps({**got, "round": i, **machine}), flush=True)
            print(json.dumps({"what": what, "workers": workers, "repeat": a.repeat,
                              f"{name}_median": round(statistics.median(ratios), 3), f"{name}_range": _span(ratios),
                              f"{name}_by_first": {k: round(statistics.median(v), 3) for k, v in by_first.items()},
                              **machine}), flush=True)
        return
    for workers in counts:
        floors, harnesses, wires, baselines = [], [], [], []
        for i in range(a.repeat):
            # each step: the list its measurement joins (None: printed only), and the measurement
            steps: list[tuple[list | None, Callable[[], dict]]] = []
            if a.plain:
                steps.append((None, lambda: measure_bare(workers, a.keys, a.seconds, False)))
            steps.append((floors, lambda: measure_bare(workers, a.keys, a.seconds, True, a.floor_sessions)))
            steps.append((harnesses, lambda: measure_harness(workers, a.keys, a.seconds)))
            if a.baseline is not None:
                steps.append((baselines, lambda: measure_harness(workers, a.keys, a.seconds, root=a.baseline.resolve())))
            if a.wire:
                steps.append((wires, lambda: measure_harness(workers, a.keys, a.seconds, wire=a.wire)))
            # Every other round runs in the reverse order, so that no side always takes the same
            # place: a harness run right after the floor's ran about 5 % slower than one right after
            # another harness run (bench/RESULTS.md, "fifteenth session").
            for place, (into, measure) in enumerate(reversed(steps) if i % 2 else steps):
                measured = measure()
                if into is not None:
                    into.append(measured)
                print(json.dumps({**measured, "round": i, "place": place, **machine}), flush=True)
        print(json.dumps({**summarize(workers, floors, harnesses), **machine}), flush=True)
        if baselines:
            print(json.dumps({**summarize(workers, floors, baselines), "of": f"the harness from {a.baseline}",
                              **machine}), flush=True)
        if wires:
            print(json.dumps({**summarize_wire(workers, harnesses, wires), **machine}), flush=True)
        if a.redlock:
            single = harnesses[-1]
            redlock = measure_harness(workers, a.keys, a.seconds, a.redlock)
            print(json.dumps({**redlock, **machine}), flush=True)
            print(json.dumps({"workers": workers, "masters": a.redlock, "single_ops_per_s": single["ops_per_s"],
                              "redlock_ops_per_s": redlock["ops_per_s"],
                              "redlock_ratio_to_single": round(redlock["ops_per_s"] / single["ops_per_s"], 3),
                              **machine}), flush=True)


if __name__ == "__main__":
    main()
