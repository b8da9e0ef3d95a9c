"""Overlap and found-nothing releases, from the history alone."""
import pytest

from leasecheck.checkers.read.jobs import job_runs
from leasecheck.checkers.read.ops import pair_ops
from leasecheck.checkers.measures.overlap import overlap
from leasecheck.checkers.measures.releases import releases

S = 1_000_000_000


def jobs(*spans):
    """spans: (attempt, key, start s, end s or None)."""
    events = []
    for attempt, key, start, end in spans:
        events.append({"time": int(start * S), "type": "job_start", "attempt": attempt, "key": key})
        if end is not None:
            events.append({"time": int(end * S), "type": "job_end", "attempt": attempt, "key": key})
    runs, problems = job_runs(sorted(events, key=lambda e: e["time"]))
    assert problems == []
    return runs


def test_no_overlap_when_one_ends_as_the_next_starts():
    o = overlap(jobs(("a", "k", 0, 1), ("b", "k", 1, 2)), end=3 * S)
    assert (o.count, o.rate, o.max_concurrency) == (0, 0.0, 1)
    assert o.concurrency_time_s == {"1": 2.0}


def test_three_at_once():
    o = overlap(jobs(("a", "k", 0, 4), ("b", "k", 1, 3), ("c", "k", 2, 5), ("x", "other", 0, 1)), end=6 * S)
    assert o.count == 2 and o.max_concurrency == 3
    assert o.concurrency_time_s == {"1": 3.0, "2": 2.0, "3": 1.0}
    assert o.rate == pytest.approx(3 / 6)
    assert o.per_key["k"] == {"count": 2, "max_concurrency": 3, "rate": pytest.approx(3 / 5)}
    assert o.per_key["other"] == {"count": 0, "max_concurrency": 1, "rate": 0.0}


def test_unfinished_job_runs_to_the_end_of_the_history():
    o = overlap(jobs(("a", "k", 0, None), ("b", "k", 8, 9)), end=10 * S)
    assert o.count == 1 and o.concurrency_time_s == {"1": 9.0, "2": 1.0}


def test_same_start_counts_once():
    o = overlap(jobs(("a", "k", 1, 2), ("b", "k", 1, 2)), end=3 * S)
    assert o.count == 1 and o.max_concurrency == 2 and o.rate == 1.0


def test_empty():
    assert overlap({}, end=S).to_dict() == {"count": 0, "rate": 0.0, "max_concurrency": 0,
                                           "concurrency_time_s": {}, "per_key": {}}


def test_releases_found_nothing():
    events = []
    for i, (kind, value) in enumerate([("ok", True), ("ok", False), ("ok", False), ("info", None), ("fail", False)]):
        events.append({"time": 2 * i, "type": "invoke", "f": "release", "attempt": f"w0.s0.{i}", "key": "k"})
        events.append({"time": 2 * i + 1, "type": kind, "f": "release", "attempt": f"w0.s0.{i}", "key": "k",
                       "value": value, "sent": []})
    ops, problems = pair_ops(events)
    r = releases(ops)
    assert problems == [] and (r.found_nothing, r.completed, r.unknown) == (2, 4, 1) and r.rate == 0.5


def _brute(runs, end):
    """Overlap counted the long way, on whole nanoseconds (the runs here are a few ns long): each
    run in (start, end) order overlaps when an earlier one of its key still runs at its start
    (a run ending exactly then does not), its concurrency is itself and those, and every
    nanosecond counts at its level."""
    by_key = {}
    for r in runs.values():
        by_key.setdefault(r.key, []).append((r.start, max(r.start, r.end if r.end is not None else end)))
    count, most, levels, per_key = 0, 0, {}, {}
    for key, spans in by_key.items():
        spans.sort()
        mine_count = sum(1 for i, (s, _) in enumerate(spans) if any(e > s for _, e in spans[:i]))
        # (a run counts itself at its start, even one that ends there)
        mine_most = max(1 + sum(1 for _, b in spans[:i] if b > s) for i, (s, _) in enumerate(spans))
        mine = {}
        for t in range(min(s for s, _ in spans), max(e for _, e in spans)):
            n = sum(1 for s, e in spans if s <= t < e)
            if n:
                mine[n] = mine.get(n, 0) + 1
                levels[n] = levels.get(n, 0) + 1
        busy = sum(mine.values())
        per_key[key] = {"count": mine_count, "max_concurrency": mine_most,
                        "rate": sum(v for n, v in mine.items() if n >= 2) / busy if busy else 0.0}
        count, most = count + mine_count, max(most, mine_most)
    busy = sum(levels.values())
    return count, most, (sum(v for n, v in levels.items() if n >= 2) / busy if busy else 0.0), per_key, \
        {str(n): levels[n] / 1e9 for n in sorted(levels)}


def test_the_one_sweep_agrees_with_counting_every_nanosecond():
    import random

    from leasecheck.checkers.read.jobs import JobRun

    rng = random.Random(22)
    for _ in range(400):
        runs = {}
        for i in range(rng.randint(1, 9)):
            start = rng.choice([0, 5, 10, rng.randint(0, 60)])
            stop = None if rng.random() < 0.1 else start + rng.choice([0, 1, 5, rng.randint(0, 40)])
            runs[f"w{i}.s0.0"] = JobRun(attempt=f"w{i}.s0.0", key=f"job:{rng.randint(0, 2)}", start=start, end=stop)
        o = overlap(runs, end=120)
        count, most, rate, per_key, times = _brute(runs, 120)
        assert (o.count, o.max_concurrency, o.per_key, o.concurrency_time_s) == (count, most, per_key, times), runs
        assert o.rate == pytest.approx(rate)
