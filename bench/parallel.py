"""What runs at once cost each other: the same seeds of one timing-sensitive configuration run one
at a time and then N at a time on this machine (`leasecheck.harness.search.pool.LocalPool`, as
``hunt --parallel N`` runs them), and what each run measured.

Per mode, one JSON line: the seeds, how many runs were INVALID (the detection rate), the median
over runs of the lease calls per second the workers made (``ops / duration_s``: the harness's own
pace, which falls when runs share too few cores), the median overlap and releases that found
nothing (what the interleavings reached), the median time to the first violation, and the wall
time of the whole mode (its ratio to the one-at-a-time mode is the speed-up). The machine's load
average before each mode is printed with it: the cores are shared.

    python bench/parallel.py                                   # 6 seeds, modes 1, 2 and 4 at once
    python bench/parallel.py --seeds 10 --parallel 1,2,3 --lease get-compare-del --nemesis pause:holder

Not a test; it prints numbers.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import tempfile
import time

from leasecheck.harness.run.preflight import preflight
from leasecheck.harness.search.pool import LocalPool
from leasecheck.harness.search.task import Job
from leasecheck.harness.settings.keywords import config_from
from leasecheck.result import Result


def mode(n: int, seeds: list[int], options: dict, results_dir: str) -> dict:
    load = os.getloadavg()[0]
    plans = [preflight(config_from(dict(options, seed=s, results_dir=results_dir))[0]) for s in seeds]
    t = time.monotonic()
    results: list[Result | None] = []
    with LocalPool(n) as pool:
        waiting = list(enumerate(plans))
        while waiting or pool.running:
            while waiting and pool.free:
                i, plan = waiting.pop(0)
                pool.submit(Job(str(i), plan=plan))
            done = pool.next()
            results.append(Result.load(done.run_dir) if done.run_dir and not done.lost and not done.error else None)
    wall = time.monotonic() - t
    ok = [r for r in results if r is not None]

    def median(values):
        values = [v for v in values if v is not None]
        return round(statistics.median(values), 3) if values else None
    return {"at_once": n, "seeds": len(seeds), "runs_checked": len(ok),
            "invalid": sum(1 for r in ok if r.valid is False),
            "ops_per_s_median": median([r.ops / r.data["duration_s"] for r in ok if r.data.get("duration_s")]),
            "overlap_median": median([r.overlap.count for r in ok]),
            "found_nothing_median": median([r.releases_found_nothing for r in ok]),
            "first_violation_s_median": median([(r.data.get("first_violation") or {}).get("time_s") for r in ok]),
            "wall_s": round(wall, 1), "load_before": round(load, 2)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seeds", type=int, default=6)
    ap.add_argument("--first-seed", type=int, default=1)
    ap.add_argument("--parallel", default="1,2,4", help="the modes: runs at once, comma-separated")
    ap.add_argument("--lease", default="naive-del")
    ap.add_argument("--nemesis", default=None)
    ap.add_argument("--time-limit", default="4s")
    ap.add_argument("--workers", type=int, default=8)
    args = ap.parse_args()
    options = {"lease": args.lease, "time_limit": args.time_limit, "workers": args.workers}
    if args.nemesis:
        options["nemesis"] = args.nemesis
    seeds = list(range(args.first_seed, args.first_seed + args.seeds))
    print(json.dumps({"machine": f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}",
                      "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), **options}))
    with tempfile.TemporaryDirectory(prefix="bench-parallel-") as tmp:
        floor = None
        for n in (int(x) for x in args.parallel.split(",")):
            row = mode(n, seeds, options, os.path.join(tmp, f"p{n}"))
            floor = floor or row["wall_s"]
            row["wall_ratio_to_one_at_a_time"] = round(row["wall_s"] / floor, 2)
            print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main()
