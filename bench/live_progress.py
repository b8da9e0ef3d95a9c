"""What the live progress display costs a run: its counting (``leasecheck.harness.run.live_stats``) timed on a
real run's history, replayed as the run wrote it.

    python bench/live_progress.py RUN_DIR [--slice 0.25]

Splits RUN_DIR/history.jsonl back into one file per process, appending each slice of SLICE
seconds (by the events' own times) and then calling ``LiveStats.sample`` as the display does,
and adds up the CPU time of those calls only. Prints one JSON line: history lines per second of
the run, the CPU the counting took as a share of one core, and the counts it ended with, next to
the checker's (results.json) when the run was checked. Not a test: the share depends on the
machine; the counts must agree.
"""
from __future__ import annotations

import argparse
import json
import platform
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from leasecheck.harness.run.live_stats import LiveStats  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("run_dir", type=Path)
    ap.add_argument("--slice", type=float, default=0.25, help="seconds between samples (the display's 4 Hz)")
    a = ap.parse_args()
    step = int(a.slice * 1e9)
    lines = (a.run_dir / "history.jsonl").read_bytes().splitlines(keepends=True)
    slices: dict[int, dict[str, list[bytes]]] = defaultdict(lambda: defaultdict(list))
    for line in lines:
        event = json.loads(line)
        process = event["process"].split(".")[0] if event["process"].startswith("w") else "harness"
        slices[int(event["time"] // step)][process].append(line)
    with tempfile.TemporaryDirectory() as d:
        stats, files, spent = LiveStats(Path(d)), {}, 0.0
        for k in sorted(slices):
            for process, part in slices[k].items():
                f = files.get(process) or files.setdefault(process, open(Path(d) / f"{process}.jsonl", "ab"))
                f.write(b"".join(part))
                f.flush()
            t = time.process_time()
            snap = stats.sample((k + 1) * step)
            spent += time.process_time() - t
        snap = stats.sample((max(slices) + 1) * step, final=True)
        stats.close()
        for f in files.values():
            f.close()
    seconds = (max(slices) + 1) * a.slice
    out = {"history_lines_per_s": round(len(lines) / seconds), "share_of_one_core": round(spent / seconds, 4),
           "samples": len(slices), "live": {"calls": snap.calls, "acquires_won": snap.acquires_won,
                                            "found_nothing": snap.found_nothing, "overlaps": snap.overlaps},
           "machine": f"{platform.machine()}, Python {platform.python_version()}"}
    results = a.run_dir / "results.json"
    if results.is_file():
        r = json.loads(results.read_text())
        out["checker"] = {"found_nothing": r.get("releases_found_nothing"), "overlaps": (r.get("overlap") or {}).get("count")}
    print(json.dumps(out))


if __name__ == "__main__":
    main()
