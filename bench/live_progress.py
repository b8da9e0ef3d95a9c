"""What the live progress display costs a run: its counting (``leasecheck.harness.run.live_stats``) timed on a
real run's history, replayed as the run wrote it.

    python bench/live_progress.py RUN_DIR [--slice 0.25]

Splits RUN_DIR/history.jsonl back into one file per process, appending each slice of SLICE
seconds (by the events' own times) and then calling ``LiveStats.sample`` as the display does,
and adds up the CPU time of those calls only. Twice: as a run counts (``share_of_one_core``: the
calls and their outcomes from a slot board, which the replay fills as the workers do, untimed;
the job lines and faults from the files) and from the history alone
(``share_of_one_core_history_only``: what a replay without a board counts). Prints one JSON line:
history lines per second of the run, both shares of one core, the counts it ended with (and
whether both ways gave the same), next to the checker's (results.json) when the run was checked.
Not a test: the share depends on the machine; the counts must agree.
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

from leasecheck.events import FAIL, INFO, INVOKE, OK  # noqa: E402
from leasecheck.harness.run.live_stats import LiveStats  # noqa: E402
from leasecheck.harness.run.slot_board import SlotBoard, outcome  # noqa: E402


CALLS = ("acquire", "release", "renew")


def replay(slices: dict, step: int, board_path: Path | None, d: Path) -> tuple[float, object]:
    """Append the slices to one file per process in ``d`` and sample after each, as the display
    does; with ``board_path``, each slot's counts are also written to a slot board as its calls
    return (what the workers do; not timed). Returns (CPU seconds of the samples, last snapshot)."""
    board, writers = None, {}
    if board_path is not None:
        procs = [e["process"] for part in slices.values() for events in part.values() for _, e in events
                 if e["process"].startswith("w") and "." in e["process"]]
        workers = 1 + max(int(p.split(".")[0][1:]) for p in procs)
        slots = 1 + max(int(p.split(".")[1][1:]) for p in procs)
        board = SlotBoard(board_path, workers, slots, create=True)
    stats, files, spent = LiveStats(d / "history.d", board=board_path), {}, 0.0
    (d / "history.d").mkdir()
    for k in sorted(slices):
        for process, part in slices[k].items():
            f = files.get(process) or files.setdefault(process, open(d / "history.d" / f"{process}.jsonl", "ab"))
            f.write(b"".join(line for line, _ in part))
            f.flush()
            if board is None:
                continue
            for _, e in part:
                if e.get("f") not in CALLS or e["type"] not in (INVOKE, OK, FAIL, INFO):
                    continue
                on_call = writers.get(e["process"])
                if on_call is None:
                    on_call = writers[e["process"]] = board.writers(board.index(e["process"]))[0]
                if e["type"] == INVOKE:
                    on_call(e["process"], e["f"])
                else:   # returned (ok, fail) or raised (info)
                    on_call(e["process"], None, outcome(e["f"], None if e["type"] == INFO else bool(e.get("value"))))
        t = time.process_time()
        snap = stats.sample((k + 1) * step)
        spent += time.process_time() - t
    snap = stats.sample((max(slices) + 1) * step, final=True)
    stats.close()
    for f in files.values():
        f.close()
    if board is not None:
        board.close()
    return spent, snap


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("run_dir", type=Path)
    ap.add_argument("--slice", type=float, default=0.25, help="seconds between samples (the display's 4 Hz)")
    a = ap.parse_args()
    step = int(a.slice * 1e9)
    lines = (a.run_dir / "history.jsonl").read_bytes().splitlines(keepends=True)
    slices: dict[int, dict[str, list]] = defaultdict(lambda: defaultdict(list))
    for line in lines:
        event = json.loads(line)
        process = event["process"].split(".")[0] if event["process"].startswith("w") else "harness"
        slices[int(event["time"] // step)][process].append((line, event))
    seconds = (max(slices) + 1) * a.slice
    with tempfile.TemporaryDirectory() as d:
        (Path(d) / "board").mkdir()
        (Path(d) / "history").mkdir()
        spent, snap = replay(slices, step, Path(d) / "board" / "slots.bin", Path(d) / "board")
        spent_history, snap_history = replay(slices, step, None, Path(d) / "history")
    live = {"calls": snap.calls, "acquires_won": snap.acquires_won, "found_nothing": snap.found_nothing,
            "overlaps": snap.overlaps}
    out = {"history_lines_per_s": round(len(lines) / seconds), "share_of_one_core": round(spent / seconds, 4),
           "share_of_one_core_history_only": round(spent_history / seconds, 4),
           "samples": len(slices), "live": live,
           "same_counts_history_only": live == {"calls": snap_history.calls, "acquires_won": snap_history.acquires_won,
                                                "found_nothing": snap_history.found_nothing,
                                                "overlaps": snap_history.overlaps},
           "machine": f"{platform.machine()}, Python {platform.python_version()}"}
    results = a.run_dir / "results.json"
    if results.is_file():
        r = json.loads(results.read_text())
        out["checker"] = {"found_nothing": r.get("releases_found_nothing"), "overlaps": (r.get("overlap") or {}).get("count")}
    print(json.dumps(out))


if __name__ == "__main__":
    main()
