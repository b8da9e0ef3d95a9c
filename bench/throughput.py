"""How many lease operations per second a leasecheck run reaches, as a ratio to the floor
measured in the same run: a bare redis-py loop sending the same commands (SET NX PX, then a Lua
compare-and-delete when it wins) from as many processes, against the same kind of store, with a
MONITOR reader attached — the audit's unavoidable cost is in the floor.

    python bench/throughput.py [--workers 4] [--seconds 10] [--keys 64]
    python bench/throughput.py --workers 4,16,64
    python bench/throughput.py --workers 4 --redlock 5    # also redlock on 5 masters, audited each

With ``--redlock N`` it also runs the ``redlock`` lease on ``--topology redlock --nodes N`` (one
audit per master) and prints ``redlock_ratio_to_single``: its lease operations per second over
the single-store harness run's, measured in the same invocation.

Prints one JSON line per measurement and, per worker count, one with ``ratio_to_floor`` =
harness ops/s / floor ops/s. Not a test: absolute numbers depend on the machine (machines of one
kind differ 3x); the ratio much less.
"""
from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import platform
import secrets
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from harness.host import default_store_bin  # noqa: E402
from harness.stores.embedded import EmbeddedStore  # noqa: E402
from workloads.leases.scripts import COMPARE_AND_DELETE  # noqa: E402


def bare_loop(port: int, keys: int, seconds: float, out: mp.Queue) -> None:
    import redis

    r = redis.Redis(port=port)
    release = r.register_script(COMPARE_AND_DELETE)
    ops = 0
    end = time.monotonic() + seconds
    i = 0
    while time.monotonic() < end:
        key = f"bench:job:{i % keys}"
        i += 7
        token = secrets.token_hex(16)
        ops += 1
        if r.set(key, token, nx=True, px=1000):
            release(keys=[key], args=[token])
            ops += 1
    out.put(ops)


def measure_bare(workers: int, keys: int, seconds: float, monitor: bool) -> dict:
    with tempfile.TemporaryDirectory() as d:
        store = EmbeddedStore(default_store_bin(), Path(d))
        store.start()
        mon = None
        try:
            if monitor:
                from harness.audit import MonitorRecorder

                mon = MonitorRecorder(store.host, store.port, Path(d) / "audit.log")
                mon.start()
            q: mp.Queue = mp.Queue()
            procs = [mp.Process(target=bare_loop, args=(store.port, keys, seconds, q))
                     for _ in range(workers)]
            for p in procs:
                p.start()
            total = sum(q.get() for _ in procs)
            for p in procs:
                p.join()
        finally:
            if mon:
                mon.close()
            store.stop()
    return {"what": "bare redis-py loop" + (" + MONITOR reader" if monitor else ""),
            "workers": workers, "keys": keys, "seconds": seconds, "ops_per_s": round(total / seconds)}


def measure_harness(workers: int, keys: int, seconds: float, redlock_nodes: int = 0) -> dict:
    lease = ["--lease", "redlock", "--topology", "redlock", "--nodes", str(redlock_nodes)] if redlock_nodes \
        else ["--lease", "token-cas"]
    with tempfile.TemporaryDirectory() as d:
        cmd = [sys.executable, "-m", "harness", "run", *lease, "--workers", str(workers),
               "--jobs", str(keys), "--job-duration", "0s", "--retry-delay", "0s",
               "--time-limit", f"{seconds}s", "--results-dir", d, "--seed", "1"]
        subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=seconds + 300)
        res = json.loads((Path(d) / "latest" / "results.json").read_text())
    what = (f"leasecheck run (redlock on {redlock_nodes} masters, history + an audit per master)" if redlock_nodes
            else "leasecheck run (token-cas, history + audit)")
    return {"what": what, "workers": workers, "keys": keys,
            "seconds": seconds, "ops_per_s": round(res["ops"] / res["duration_s"]),
            "valid": res["valid"]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workers", default="4", help="one count or several, comma-separated")
    ap.add_argument("--seconds", type=float, default=10.0)
    ap.add_argument("--keys", type=int, default=64)
    ap.add_argument("--plain", action="store_true", help="also measure the bare loop without MONITOR")
    ap.add_argument("--redlock", type=int, default=0, metavar="N",
                    help="also run the redlock lease on N masters and compare it with the single-store run")
    a = ap.parse_args()
    machine = {"machine": f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}"}
    for workers in [int(x) for x in a.workers.split(",")]:
        if a.plain:
            print(json.dumps({**measure_bare(workers, a.keys, a.seconds, False), **machine}), flush=True)
        floor = measure_bare(workers, a.keys, a.seconds, True)
        print(json.dumps({**floor, **machine}), flush=True)
        harness = measure_harness(workers, a.keys, a.seconds)
        print(json.dumps({**harness, **machine}), flush=True)
        print(json.dumps({"workers": workers, "floor_ops_per_s": floor["ops_per_s"],
                          "harness_ops_per_s": harness["ops_per_s"],
                          "ratio_to_floor": round(harness["ops_per_s"] / floor["ops_per_s"], 3), **machine}),
              flush=True)
        if a.redlock:
            redlock = measure_harness(workers, a.keys, a.seconds, a.redlock)
            print(json.dumps({**redlock, **machine}), flush=True)
            print(json.dumps({"workers": workers, "masters": a.redlock, "single_ops_per_s": harness["ops_per_s"],
                              "redlock_ops_per_s": redlock["ops_per_s"],
                              "redlock_ratio_to_single": round(redlock["ops_per_s"] / harness["ops_per_s"], 3),
                              **machine}), flush=True)


if __name__ == "__main__":
    main()
