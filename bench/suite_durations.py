"""Where the test suite's time goes: read the output of a pytest run with ``--durations=0`` and
print each file's seconds (setup + call + teardown of its tests, as pytest reports them), the
total, and how files would fall on N workers under ``--dist loadfile`` (a file is one worker's;
files go, in the given order, to whichever worker is free first), for N = 1..4.

    python -m pytest -q -p no:cacheprovider -n 2 --dist loadfile --durations=0 | tee /tmp/d.txt
    python bench/suite_durations.py /tmp/d.txt [--top 25]

The order used for the simulation is the order in which the files first appear in the log's
durations table sorted by name (pytest collects ``tests/`` alphabetically); ``--longest-first``
simulates the longest files going first instead (what `tests/conftest.py` does with
``tests/durations.json``); ``--write tests/durations.json`` stores the log's per-file seconds there
(the files of 5 s or more, rounded) for that ordering. A sum of durations is the workers' time, not
the wall time: under load the same test takes one to three times as long from run to run, so
compare files within one log."""
from __future__ import annotations

import argparse
import heapq
import json
import re
from collections import defaultdict

LINE = re.compile(r"^([\d.]+)s (setup|call|teardown)\s+(\S+?)::")


def per_file(path: str) -> dict[str, float]:
    out: dict[str, float] = defaultdict(float)
    with open(path) as f:
        for line in f:
            m = LINE.match(line)
            if m:
                out[m.group(3)] += float(m.group(1))
    return dict(out)


def schedule(files: list[tuple[str, float]], n: int) -> list[float]:
    """Greedy: each file, in order, to the worker that frees up first; each worker's busy time."""
    heap = [(0.0, i) for i in range(n)]
    for _, secs in files:
        busy, i = heapq.heappop(heap)
        heapq.heappush(heap, (busy + secs, i))
    return sorted(busy for busy, _ in heap)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("log")
    ap.add_argument("--top", type=int, default=25)
    ap.add_argument("--longest-first", action="store_true")
    ap.add_argument("--workers", type=int, nargs="+", default=[1, 2, 3, 4, 6])
    ap.add_argument("--write", metavar="JSON", help="store the per-file seconds (files of 5 s or more) there")
    a = ap.parse_args()
    files = per_file(a.log)
    if a.write:
        kept = {name: round(secs) for name, secs in sorted(files.items(), key=lambda kv: -kv[1]) if secs >= 5}
        with open(a.write, "w") as f:
            json.dump(kept, f, indent=0)
            f.write("\n")
    ordered = sorted(files.items(), key=(lambda kv: -kv[1]) if a.longest_first else (lambda kv: kv[0]))
    print(f"files: {len(files)}, total: {sum(files.values()):.0f} s")
    for name, secs in sorted(files.items(), key=lambda kv: -kv[1])[:a.top]:
        print(f"{secs:8.1f}  {name}")
    for n in a.workers:
        busy = schedule(ordered, n)
        print(f"-n {n}: busiest worker {busy[-1]:.0f} s, workers {', '.join(f'{b:.0f}' for b in busy)}")


if __name__ == "__main__":
    main()
