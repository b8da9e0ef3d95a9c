"""What the HTML report adds to a check, as ratios to the same run's parse floor: generate the
synthetic run of ``checker_speed.py`` (about ``--events`` history events and their audit), then
time, each in a child process of its own (its peak memory is its own), (1) the check alone
(``check_run``, what ``checker_speed.py`` times) and (2) what a finished run does
(``check_and_save``: the check, ``results.json``, the witness and ``report.html``). Prints one
JSON line per repetition with both times (wall and CPU), their ratios to the floor and
``report_share`` = (check_and_save − check) / check_and_save (CPU). ``--also DIR`` times another
checkout the same way, alternating with this one on the same files (``DIR`` laid out as the
installed package: ``DIR/leasecheck/{checkers,harness,workloads,...}``; its children run with
``PYTHONPATH=DIR``).

    python bench/report_speed.py --events 1000000 --repeat 3
    python bench/report_speed.py --events 1000000 --repeat 3 --also /tmp/main-pkg

Not a test: absolute numbers depend on the machine; the ratios much less.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

from checker_speed import generate, parse_floor_times  # noqa: E402

_CHILD = """
import json, resource, sys, time
from pathlib import Path
run, what = Path(sys.argv[1]), sys.argv[2]
if what == "check":
    from leasecheck.checkers import check_run as go
else:
    from leasecheck.harness.run.pipeline import check_and_save as go
t0 = time.perf_counter()
c0 = time.process_time()
go(run)
import leasecheck.checkers
print(json.dumps({"s": time.perf_counter() - t0, "cpu_s": time.process_time() - c0,
                  "from": str(Path(leasecheck.checkers.__file__).parent.parent),
                  "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""


def _child(run_dir: Path, what: str, code: str | None = None) -> dict:
    env = dict(os.environ, PYTHONPATH=code) if code else None
    # cwd: not the repository, whose leasecheck/ folder `python -c` would import first
    out = subprocess.run([sys.executable, "-c", _CHILD, str(run_dir), what], capture_output=True, text=True,
                         check=True, env=env, cwd=run_dir.parent)
    return json.loads(out.stdout.strip().splitlines()[-1])


def measure(events: int, repeat: int, also: str | None = None):
    with tempfile.TemporaryDirectory() as d:
        run_dir = Path(d) / "results" / "bench" / "20261201T000000.000000Z"
        run_dir.parent.mkdir(parents=True)
        n = generate(run_dir, events)
        shutil.rmtree(run_dir / "history.d", ignore_errors=True)
        for _ in range(repeat):
            for code in ([None, also] if also else [None]):
                floor_s, floor_cpu_s = parse_floor_times(run_dir)
                check = _child(run_dir, "check", code)
                saved = _child(run_dir, "save", code)
                html = run_dir / "report.html"
                yield {"code": code or "this checkout", "imported_from": saved["from"], "events": n, "floor_s": round(floor_s, 3),
                       "floor_cpu_s": round(floor_cpu_s, 3),
                       "check_s": round(check["s"], 2), "check_and_save_s": round(saved["s"], 2),
                       "check_cpu_s": round(check["cpu_s"], 2), "check_and_save_cpu_s": round(saved["cpu_s"], 2),
                       "check_cpu_ratio_to_floor": round(check["cpu_s"] / floor_cpu_s, 2),
                       "check_and_save_cpu_ratio_to_floor": round(saved["cpu_s"] / floor_cpu_s, 2),
                       "check_ratio_to_floor": round(check["s"] / floor_s, 2),
                       "check_and_save_ratio_to_floor": round(saved["s"] / floor_s, 2),
                       "report_share": round((saved["cpu_s"] - check["cpu_s"]) / saved["cpu_s"], 3),
                       "check_peak_rss_mb": round(check["peak_rss_mb"], 1),
                       "check_and_save_peak_rss_mb": round(saved["peak_rss_mb"], 1),
                       "report_kb": round(html.stat().st_size / 1024) if html.is_file() else None,
                       "machine": f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}",
                       "load_avg_1m": round(os.getloadavg()[0], 2),
                       "when": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}
                html.unlink(missing_ok=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--events", type=int, default=1_000_000)
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--also", default=None, help="another checkout (package layout) to time alternately")
    a = ap.parse_args()
    if a.events < 1 or a.repeat < 1:
        print("report_speed: --events and --repeat must be at least 1", file=sys.stderr)
        sys.exit(64)
    if a.also and not (Path(a.also) / "leasecheck" / "checkers").is_dir():
        print(f"report_speed: --also {a.also}: no leasecheck/checkers there; lay the checkout out as the "
              "installed package (DIR/leasecheck/checkers, DIR/leasecheck/harness, ...)", file=sys.stderr)
        sys.exit(64)
    for row in measure(a.events, a.repeat, a.also):
        print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main()
