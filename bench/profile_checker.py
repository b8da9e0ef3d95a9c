"""Where the checker's time goes: generate the benchmark's synthetic run (``checker_speed.generate``)
and check it under cProfile, printing the functions that cost most (own time and cumulative).

    python bench/profile_checker.py --events 200000
    python bench/profile_checker.py --events 1000000 --top 40 --sort tottime
    python bench/profile_checker.py --run-dir results/latest        # a stored run instead

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
        prof = cProfile.Profile()
        prof.enable()
        result = check_run(run_dir)
        prof.disable()
    print(f"valid={result.get('valid')} ops={result.get('ops')}")
    stats = pstats.Stats(prof).strip_dirs().sort_stats(a.sort)
    stats.print_stats(a.top)
    if a.out:
        stats.dump_stats(a.out)


if __name__ == "__main__":
    main()
