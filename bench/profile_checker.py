"""Where the checker's time goes: generate the benchmark's synthetic run (``checker_speed.generate``)
and check it under cProfile, printing the functions that cost most (own time and cumulative).

    python bench/profile_checker.py --events 200000
    python bench/profile_checker.py --events 1000000 --top 40 --sort tottime
    python bench/profile_checker.py --run-dir results/latest        # a stored run instead
    python bench/profile_checker.py --events 300000 --stages        # CPU per stage, no profiler

``--stages`` prints, without a profiler, the CPU seconds of each layer on its own as a ratio to the
benchmark's parse floor: the history stream alone (read as the check reads it: its common lines as
typed records, `HistoryStream.records`), the history digest (stream + the digest the properties
read), the audit stream alone, and the whole check: what the reading costs before any judging.

With the compiled checker installed (setup.py), cProfile sees only what the compiled modules call
outside themselves: profile the pure-Python checker with ``LEASECHECK_PURE_PYTHON=1``, or the
compiled one with a sampling profiler (``perf record -g python bench/profile_checker.py --stages``).
``--stages`` measures whichever is loaded.

Not a test: it prints a profile. ``--keep DIR`` writes the generated run there (and reuses it when
it exists), ``--out FILE`` saves the raw profile for ``python -m pstats FILE`` or snakeviz.
"""
from __future__ import annotations

import argparse
import cProfile
import pstats
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from checker_speed import generate  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--events", type=int, default=200_000, help="size of the generated run")
    ap.add_argument("--run-dir", help="profile the check of this run directory instead")
    ap.add_argument("--keep", help="generate the run into this directory (reused when present)")
    ap.add_argument("--top", type=int, default=30, help="how many functions to print")
    ap.add_argument("--sort", default="tottime", choices=["tottime", "cumulative", "ncalls"])
    ap.add_argument("--out", help="also save the raw profile here")
    ap.add_argument("--stages", action="store_true", help="CPU of each stage against the parse floor")
    a = ap.parse_args()
    if a.events < 1 or a.top < 1:
        print("profile_checker: --events and --top must be at least 1", file=sys.stderr)
        sys.exit(64)
    from leasecheck.checkers import check_run
    with tempfile.TemporaryDirectory() as d:
        if a.run_dir:
            run_dir = Path(a.run_dir)
            if not (run_dir / "history.jsonl").exists():
                print(f"profile_checker: {run_dir} has no history.jsonl: give a run directory",
                      file=sys.stderr)
                sys.exit(64)
        else:
            run_dir = Path(a.keep) if a.keep else Path(d) / "run"
            if not (run_dir / "history.jsonl").exists():
                generate(run_dir, a.events)
        if a.stages:
            stages(run_dir)
            return
        prof = cProfile.Profile()
        prof.enable()
        result = check_run(run_dir)
        prof.disable()
    print(f"valid={result.get('valid')} ops={result.get('ops')}")
    stats = pstats.Stats(prof).strip_dirs().sort_stats(a.sort)
    stats.print_stats(a.top)
    if a.out:
        stats.dump_stats(a.out)


def stages(run_dir: Path, repeat: int = 3) -> None:
    """Print one JSON line: each stage's best CPU seconds of `repeat`, and its ratio to the floor."""
    import json
    import time

    from checker_speed import parse_floor_times
    from leasecheck.checkers import check_run
    from leasecheck.checkers.read.audit import open_audit
    from leasecheck.checkers.read.digest import Digest
    from leasecheck.checkers.read.history import HistoryStream

    def cpu(fn) -> float:
        best = float("inf")
        for _ in range(repeat):
            c0 = time.process_time()
            fn()
            best = min(best, time.process_time() - c0)
        return best

    def drain(it) -> None:
        for _ in it:
            pass
    floor = min(parse_floor_times(run_dir)[1] for _ in range(repeat))   # (its own CPU: the faster parser's)
    audit = open_audit(run_dir)
    row = {"floor_cpu_s": round(floor, 3),
           "history_stream": cpu(lambda: drain(HistoryStream(run_dir).records())),
           "history_digest": cpu(lambda: Digest().consume(HistoryStream(run_dir).records())),
           "audit_stream": cpu(lambda: drain(audit)) if audit is not None else 0.0,
           "check": cpu(lambda: check_run(run_dir))}
    for k in ("history_stream", "history_digest", "audit_stream", "check"):
        row[k] = {"cpu_s": round(row[k], 3), "ratio_to_floor": round(row[k] / floor, 2)}
    print(json.dumps(row))


if __name__ == "__main__":
    main()
