"""Overlap: two or more runs of the same job at once, from the history alone.

A run is `job_start`..`job_end` of one attempt (see `jobs`); a run that never ended lasts until
`end` (the last event of the history). Per key:

- `count`: runs that started while another run of that key was in progress (a run ending at the
  very instant another starts does not overlap it; two starting at the same instant do);
- `concurrency_time_s`: for each level n >= 1, the time (s) during which exactly n runs were in
  progress, summed over keys;
- `rate`: time with >= 2 runs / time with >= 1 run (0.0 when no job ran);
- `max_concurrency`: the most runs of one key in progress at once;
- `per_key`: `count`, `rate` and `max_concurrency` for each job key that ran a job.
"""
from __future__ import annotations

import heapq
from collections import defaultdict
from dataclasses import dataclass, field

from leasecheck.checkers.read.jobs import JobRun


@dataclass
class Overlap:
    count: int = 0
    rate: float = 0.0
    max_concurrency: int = 0
    concurrency_time_s: dict[str, float] = field(default_factory=dict)
    per_key: dict[str, dict] = field(default_factory=dict)

    def to_dict(self) -> dict:
        return {"count": self.count, "rate": self.rate, "max_concurrency": self.max_concurrency,
                "concurrency_time_s": dict(self.concurrency_time_s),
                "per_key": {k: dict(v) for k, v in self.per_key.items()}}


def overlap(runs: dict[str, JobRun], end: int) -> Overlap:
    """Measure overlap of the job `runs`, treating unfinished runs as lasting until `end` (ns)."""
    by_key: dict[str, list[tuple[int, int]]] = defaultdict(list)
    for run in runs.values():
        by_key[run.key].append((run.start, max(run.start, run.end if run.end is not None else end)))
    result = Overlap()
    levels: dict[int, int] = defaultdict(int)   # level -> ns
    for key, spans in sorted(by_key.items(), key=lambda kv: str(kv[0])):
        # One sweep over the runs in start order, their ends from a heap (an end at a start's
        # time comes first): between two such moments as many runs were in progress as `active`
        # holds, which is how long the key spent at each level.
        active: list[int] = []                   # end times of runs in progress
        count = most = 0
        prev = 0               # the last moment swept (read only while a run is in progress)
        mine: dict[int, int] = defaultdict(int)  # level -> ns the key spent at it
        spans.sort()
        for start, stop in spans:
            while active and active[0] <= start:
                ended = heapq.heappop(active)
                mine[len(active) + 1] += ended - prev
                prev = ended
            if active:
                mine[len(active)] += start - prev
                count += 1
            prev = start
            heapq.heappush(active, stop)
            most = max(most, len(active))
        while active:
            ended = heapq.heappop(active)
            mine[len(active) + 1] += ended - prev
            prev = ended
        for n, ns in mine.items():
            levels[n] += ns
        busy = sum(mine.values())
        result.count += count
        result.max_concurrency = max(result.max_concurrency, most)
        result.per_key[str(key)] = {"count": count, "max_concurrency": most,
                                    "rate": sum(ns for n, ns in mine.items() if n >= 2) / busy if busy else 0.0}
    busy = sum(levels.values())
    result.rate = sum(ns for n, ns in levels.items() if n >= 2) / busy if busy else 0.0
    result.concurrency_time_s = {str(n): levels[n] / 1e9 for n in sorted(levels) if levels[n] > 0}
    return result
