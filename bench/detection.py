"""Detection power: how long until a lease's mistake is shown, with and without aimed faults,
against what a team sees today from a plain loop.

For each lease (the built-in mistakes `naive-del`, `get-compare-del`, `fixed-token`, a hand-written
check-then-act release (`bench/check_then_act.py`), and the repair `token-cas` as a control) and
each way of running it:

- ``none``: `leasecheck run` with no faults;
- ``default``: `leasecheck run --nemesis default`, the default fault mix of `hunt` and `matrix`
  (replies late all run, a pause past the deadline every 2 TTLs aimed at lease calls);
- ``random``: the random nemesis a user reaches for first, ``--nemesis pause,latency,partition``
  at the default interval (clock jumps, kills and evictions are left out: they make even a
  correct lease lose claims early, which is not the mistake under test);
- ``aimed``: every reply on the workers' path 100 ms late, and the worker inside ``release()``
  paused for 1.5 s every 2 s (a scenario written to a temporary file, as
  `scenarios/check-then-act.toml` does for 12 s);
- ``loop``: no harness at all — the same lease class driven by threads of one process against
  the same kind of store, jobs drawn from the same distribution, stopping at the first thing a
  team could see go wrong: two threads running the same job at once.

every seed runs for ``--time-limit`` seconds (60 by default; the run does not stop early), and
the time to the first violation is `first_violation.time_s` of its `results.json` (for ``loop``:
the first double run). One JSON line per cell: seeds, how many were found, the median and the
maximum time (null when the seeds not found decide them: then it is "more than the limit").

    python bench/detection.py                       # 5 leases x 5 modes x 10 seeds x 60 s: ~4.5 h
    python bench/detection.py --seeds 3 --time-limit 20 --modes aimed,loop --leases get-compare-del
    python bench/detection.py --leases get-compare-del --modes default --time-limit 30   # issue 21

Not a test; it prints numbers. The loop's double runs happen for every lease whose jobs can
outlive the lease, the repair included: that is what it cannot tell apart.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import random
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import redis

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from leasecheck.harness.run.host import default_store_bin  # noqa: E402
from leasecheck.harness.stores.embedded import EmbeddedStore  # noqa: E402
from leasecheck.workloads.leases import load_lease  # noqa: E402

LEASES = ("naive-del", "get-compare-del", "fixed-token", "check-then-act", "token-cas")
PLUGINS = {"check-then-act": f"{ROOT / 'bench' / 'check_then_act.py'}:CheckThenAct"}
MODES = ("none", "default", "random", "aimed", "loop")
WORKERS, TTL_S, JOBS = 8, 1.0, ((0.9, 0.4), (0.1, 1.6))   # leasecheck run's defaults


def aimed_scenario(path: Path, seconds: float) -> Path:
    events = [f'[[event]]\nat = "0s"\nfault = "latency"\nlatency = "100ms"\nduration = "{seconds - 0.2:.1f}s"\n']
    at = 1.0
    while at + 1.5 < seconds:
        events.append(f'[[event]]\nat = "{at:.0f}s"\nfault = "pause"\ntarget = "releaser"\nduration = "1.5s"\n')
        at += 2.0
    path.write_text(f'name = "aimed"\n[run]\ntime_limit = "{seconds:g}s"\n\n' + "\n".join(events))
    return path


def harness_run(lease: str, mode: str, seed: int, seconds: float, tmp: Path) -> float | None:
    """One `leasecheck run`; the time of its first violation, or None."""
    cmd = [sys.executable, "-m", "leasecheck", "run", "--lease", PLUGINS.get(lease, lease), "--seed", str(seed),
           "--time-limit", f"{seconds:g}s", "--results-dir", str(tmp / "results")]
    if mode == "default":
        cmd += ["--nemesis", "default"]
    elif mode == "random":
        cmd += ["--nemesis", "pause,latency,partition"]
    elif mode == "aimed":
        cmd += ["--scenario", str(aimed_scenario(tmp / "aimed.toml", seconds))]
    p = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=seconds + 300)
    results = tmp / "results" / "latest" / "results.json"
    if not results.exists():
        raise RuntimeError(f"{' '.join(cmd)} wrote no results (exit {p.returncode}): {p.stderr[-500:]}")
    first = json.loads(results.read_text()).get("first_violation")
    return first["time_s"] if p.returncode == 1 and first else None


def loop_run(lease: str, seed: int, seconds: float, tmp: Path) -> float | None:
    """The lease driven by threads in one process; the time of the first double run, or None."""
    cls = load_lease(PLUGINS.get(lease, lease))
    store = EmbeddedStore(default_store_bin(), tmp)
    store.start()
    running: dict[str, int] = {}
    lock, found, stop = threading.Lock(), [], threading.Event()
    start = time.monotonic()

    def work(i: int) -> None:
        client, rng = redis.Redis(port=store.port), random.Random(seed * 1000 + i)
        while not stop.is_set() and time.monotonic() - start < seconds:
            lease_ = cls(client, "job:0", int(TTL_S * 1000))
            if not lease_.acquire():
                time.sleep(0.01)
                continue
            with lock:
                running["job:0"] = running.get("job:0", 0) + 1
                if running["job:0"] > 1 and not found:
                    found.append(time.monotonic() - start)
                    stop.set()
            time.sleep(JOBS[0][1] if rng.random() < JOBS[0][0] else JOBS[1][1])
            with lock:
                running["job:0"] -= 1
            lease_.release()

    threads = [threading.Thread(target=work, args=(i,)) for i in range(WORKERS)]
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        store.stop()
    return round(found[0], 3) if found else None


def cell(lease: str, mode: str, seeds: int, seconds: float) -> dict:
    times = []
    for seed in range(1, seeds + 1):
        with tempfile.TemporaryDirectory() as d:
            t = loop_run(lease, seed, seconds, Path(d)) if mode == "loop" else \
                harness_run(lease, mode, seed, seconds, Path(d))
        times.append(t)
    ranked = sorted(t if t is not None else float("inf") for t in times)
    median = statistics.median(ranked)
    shows = "first double run (any lease)" if mode == "loop" else "first proven violation"
    return {"lease": lease, "mode": mode, "shows": shows, "seeds": seeds, "time_limit_s": seconds,
            "found": sum(t is not None for t in times),
            "median_s": None if median == float("inf") else round(median, 3),
            "max_s": None if ranked[-1] == float("inf") else round(ranked[-1], 3),
            "times_s": times}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--leases", default=",".join(LEASES))
    ap.add_argument("--modes", default=",".join(MODES))
    ap.add_argument("--seeds", type=int, default=10)
    ap.add_argument("--time-limit", type=float, default=60.0)
    a = ap.parse_args()
    leases, modes = a.leases.split(","), a.modes.split(",")
    bad = [x for x in leases if x not in LEASES] + [x for x in modes if x not in MODES]
    if bad:
        sys.exit(f"detection.py: unknown {', '.join(bad)}; leases are {', '.join(LEASES)}, modes {', '.join(MODES)}")
    machine = f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}"
    for lease in leases:
        for mode in modes:
            print(json.dumps(cell(lease, mode, a.seeds, a.time_limit) | {"machine": machine}), flush=True)


if __name__ == "__main__":
    main()
