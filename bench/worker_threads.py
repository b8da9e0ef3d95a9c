"""What each thread of a live run's workers costs, and how often it runs, per 1,000 store operations.

    python bench/worker_threads.py [--workers 64] [--seconds 12]

Starts ``leasecheck run --lease token-cas --workers N --jobs 64 --job-duration 0s --retry-delay 0s``
(the run ``bench/throughput.py`` measures), waits until the store runs lease commands and 2 s
more, and over a window of the steady state reads every worker thread's CPU and its count of
times it was switched in (``/proc/PID/task/TID/schedstat``: nanoseconds, not clock ticks), its
voluntary and involuntary context switches, the workers' minor page faults and the memory of
eight of them (``/proc/PID/smaps_rollup``, kB). Python names no threads for the kernel, so they
are listed by their order of creation in the worker (``t0`` the main thread, then the history
flusher, the wire path's loop, the stdin reader, the hung-call watch and the slots, as
``harness/run/worker.py`` starts them): by their thread ids counted from the process's, which
wrap at ``pid_max``. Operations are counted by the store (``SET`` +
``EVALSHA``). Not a test.
"""
from __future__ import annotations

import argparse
import collections
import glob
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import redis  # noqa: E402

from bench.cpu_window import cmdline, memory, minor_faults, parent_cmdline, store_ops, tree  # noqa: E402
from leasecheck.harness.run.fork_server import forked_role  # noqa: E402

try:
    with open("/proc/sys/kernel/pid_max") as _f:
        _PID_MAX = int(_f.read())
except OSError:
    _PID_MAX = 1 << 22
MEMORY = ("Rss", "Shared_Clean", "Shared_Dirty", "Private_Dirty", "Anonymous")


def _threads(pid: int) -> dict[int, tuple]:
    """tid -> (its place among the process's threads, CPU ns, runs, voluntary, involuntary)."""
    out = {}
    try:
        # in order of creation: a thread's id follows its process's, modulo the wrap at pid_max
        tids = sorted(os.listdir(f"/proc/{pid}/task"), key=lambda tid: (int(tid) - pid) % _PID_MAX)
    except OSError:
        return out
    for place, tid in enumerate(tids):
        try:
            with open(f"/proc/{pid}/task/{tid}/schedstat") as f:
                ns, _wait, runs = (int(x) for x in f.read().split())
            with open(f"/proc/{pid}/task/{tid}/status") as f:
                status = dict(line.split(":\t", 1) for line in f.read().splitlines() if ":\t" in line)
        except OSError:
            continue
        out[int(tid)] = (f"t{place}", ns, runs, int(status["voluntary_ctxt_switches"]),
                         int(status["nonvoluntary_ctxt_switches"]))
    return out


def _workers(root_pid: int) -> list[int]:
    """The run's workers: processes running the worker (forked ones keep the fork server's command
    line, which names the worker module too: the server itself is told apart by its parent)."""
    out = []
    for pid in tree([root_pid]):
        cmd = cmdline(pid)
        if pid != root_pid and "leasecheck.harness.run.worker" in cmd \
                and forked_role(cmd, parent_cmdline(pid)) != "server":
            out.append(pid)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workers", type=int, default=64)
    ap.add_argument("--seconds", type=float, default=12.0)
    a = ap.parse_args()
    if a.workers < 1 or a.seconds < 8:
        ap.exit(64, "error: give --workers >= 1 and --seconds >= 8\n")
    with tempfile.TemporaryDirectory() as d:
        cmd = [sys.executable, "-m", "leasecheck", "run", "--lease", "token-cas", "--workers", str(a.workers),
               "--jobs", "64", "--job-duration", "0s", "--retry-delay", "0s", "--time-limit", f"{a.seconds}s",
               "--results-dir", d, "--seed", "1"]
        with subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL) as proc:
            try:
                port = None
                while port is None:
                    for path in glob.glob(os.path.join(d, "*", "*", "config.json")):
                        try:
                            port = int(json.loads(Path(path).read_text())["store_port"])
                        except (OSError, ValueError, KeyError):
                            pass
                    time.sleep(0.05)
                client = redis.Redis(port=port)
                while store_ops(client) == 0:
                    time.sleep(0.05)
                time.sleep(2.0)
                pids = _workers(proc.pid)
                mem = [memory(p) for p in pids[:8]]
                before = ({p: _threads(p) for p in pids}, sum(minor_faults(p) for p in pids), store_ops(client),
                          time.monotonic())
                time.sleep(max(1.0, min(5.0, a.seconds - 5.0)))
                after = ({p: _threads(p) for p in pids}, sum(minor_faults(p) for p in pids), store_ops(client),
                         time.monotonic())
                proc.wait(timeout=a.seconds + 300)
            except BaseException:
                proc.terminate()
                raise
    ops = max(1, after[2] - before[2])
    elapsed = after[3] - before[3]
    by_place: dict[str, list[int]] = collections.defaultdict(lambda: [0, 0, 0, 0])
    for pid in pids:
        for tid, (place, ns, runs, vol, invol) in after[0][pid].items():
            if tid in before[0][pid]:
                _, ns0, runs0, vol0, invol0 = before[0][pid][tid]
                acc = by_place[place]
                acc[0] += ns - ns0
                acc[1] += runs - runs0
                acc[2] += vol - vol0
                acc[3] += invol - invol0
    print(json.dumps({"workers": len(pids), "ops_per_s": round(ops / elapsed),
                      "minflt_per_kop": round(1000 * (after[1] - before[1]) / ops, 1),
                      **{f"{k}_kB": round(statistics.mean(m.get(k, 0) for m in mem)) for k in MEMORY},
                      "load_avg_1m": round(os.getloadavg()[0], 1),
                      "machine": f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}"}))
    for place, (ns, runs, vol, invol) in sorted(by_place.items(), key=lambda kv: -kv[1][0]):
        print(json.dumps({"thread": place, "cpu_ms_per_kop": round(ns / 1e3 / ops, 2),
                          "runs_per_kop": round(1000 * runs / ops, 1), "runs_per_s_per_worker": round(runs / elapsed / len(pids), 1),
                          "voluntary_per_kop": round(1000 * vol / ops, 1), "involuntary_per_kop": round(1000 * invol / ops, 1)}))


if __name__ == "__main__":
    main()
