"""What liveness costs and shows: kill the holder (and hang it) in short runs of a few leases, and
print each run's verdicts, recovery times against the TTL, the longest hold, and the checker's
time with and without the liveness properties on the same run (a ratio to that floor).

    .venv/bin/python bench/liveness.py [--runs 3] [--time-limit 10]
"""
from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from leasecheck.checkers.properties import PROPERTIES, registry
from leasecheck.checkers.read.audit import open_audit
from leasecheck.checkers.read.history import HistoryStream
from leasecheck.checkers.read.rundir import load_config, load_store_clock
from leasecheck.checkers.verdict import check

ROOT = Path(__file__).resolve().parents[1]
LIVENESS = {"stuck_claims", "kept_alive", "recovery", "max_hold"}
CASES = [("token-cas", "kill:holder"), ("token-cas-renew", "hang:holder"),
         ("tests/integration/liveness_leases.py:NoExpiry", "kill:holder")]


def _check_s(run: Path, props) -> float:
    history = HistoryStream(run)
    config, _ = load_config(run, lambda: history.scan(b"run_start")[:1])
    samples, _ = load_store_clock(run)
    t = time.perf_counter()
    check(HistoryStream(run), open_audit(run), config, samples, properties=props)
    return time.perf_counter() - t


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--time-limit", default="10")
    args = ap.parse_args()
    floor = registry([p for p in PROPERTIES if p.__name__.rsplit(".", 1)[-1] not in LIVENESS])
    with tempfile.TemporaryDirectory() as tmp:
        for lease, fault in CASES:
            for seed in range(1, args.runs + 1):
                results = Path(tmp) / "results"
                subprocess.run([sys.executable, "-m", "leasecheck", "run", "--lease", lease, "--nemesis", fault,
                                "--nemesis-interval", "4s", "--time-limit", args.time_limit, "--seed", str(seed),
                                "--results-dir", str(results)], cwd=ROOT, capture_output=True, text=True)
                run = (results / "latest").resolve()
                r = json.loads((run / "results.json").read_text())
                rec, holds = r.get("recovery") or {}, r.get("holds") or {}
                base = statistics.median(_check_s(run, floor) for _ in range(3))
                full = statistics.median(_check_s(run, PROPERTIES) for _ in range(3))
                print(f"{lease} x {fault} seed {seed}: safety {r['safety']['valid']} liveness {r['liveness']['valid']}; "
                      f"recovery n={rec.get('count')} median {rec.get('median_s')} s max {rec.get('max_s')} s "
                      f"(TTL {rec.get('ttl_s')} s); stuck {r['stuck_claims']['count']}; longest hold "
                      f"{holds.get('longest_s')} s; check {base:.3f} s without liveness, {full:.3f} s with "
                      f"(x{full / base:.2f}); {r['ops']} calls")


if __name__ == "__main__":
    main()
