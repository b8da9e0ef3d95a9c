"""The run over time, as the HTML report draws it, gathered in the checker's one pass over the
history (the digest feeds it) — so the report never reads the history again, and draws the
checker's own pairing of calls, job runs and faults.

Bounded whatever the run's length: per worker slot (a lane) the time it held a claim as it
believed (won at the acquire's completion, live until the acquire's invocation + TTL, renewals
included), within its TTL and past it, ran the job, and released; per job key (the first
`MAX_KEYS`) who held it and how many jobs ran on it at once; latencies and rates per lease call.
Everything is kept in time buckets (`grid.Grid`) that widen as the run goes, so a 1-hour history
costs the memory of a 20-second one; only what is live (claims held, jobs running) is kept per
attempt.

`Timeline.drawing(...)` ends it: the compact, JSON-ready description the report renders
(``timeline.json`` in the run directory). Spans a killed run left open (no release, no job_end,
no fault_end) are closed at the last time the history reached, and said to be open. A key's
holder stops at the moment another attempt's release removed its claim (`victims`: the
checker's foreign releases), which is only known once the audit was read: each bucket keeps its
TOP longest holder stretches, cut at the end.
"""
from __future__ import annotations

import contextlib
import contextvars
import re
from typing import Any

from leasecheck.checkers.measures.grid import Grid, Samples, add
from leasecheck.checkers.read.ops import Op, slot_of
from leasecheck.events import ACQUIRE, CALLS, COMPLETIONS, JOB_END, JOB_START, OK, RELEASE, RENEW

LANE_BUCKETS = 1200      # timeline resolution (the width doubles as the run grows)
PLOT_BUCKETS = 400       # latency and rate resolution
MAX_KEYS = 8             # keys drawn with their own holder strip
MAX_MARKS = 2000         # releases that found nothing / ended unknown, each drawn
MAX_FAULTS = 2000
KINDS = CALLS            # acquire, release, renew, effect
OUTCOMES = COMPLETIONS   # ok, fail, info
# Whether the digests made now gather a timeline: only a check whose caller draws the report asks
# (`gathering`), so a check alone (``check_run`` without ``timeline``) pays nothing for it.
_GATHER: contextvars.ContextVar[bool] = contextvars.ContextVar("leasecheck_timeline", default=False)
TOP = 4                  # holder stretches kept per key and bucket (the longest)


def wanted() -> bool:
    """Whether a digest made now should gather a timeline."""
    return _GATHER.get()


@contextlib.contextmanager
def gathering():
    """Within it, every digest made in this thread gathers a `Timeline` (``Digest.timeline``)."""
    token = _GATHER.set(True)
    try:
        yield
    finally:
        _GATHER.reset(token)


class _Lane:
    __slots__ = ("name", "held", "overdue", "job", "releases", "nothing", "unknown", "open_at_end")

    def __init__(self, name: str, grid: Grid) -> None:
        self.name = name
        self.held, self.overdue, self.job = grid.array(int, add), grid.array(int, add), grid.array(int, add)
        self.releases, self.nothing, self.unknown = grid.array(int, add), grid.array(int, add), grid.array(int, add)
        self.open_at_end = 0


class _Claim:
    """A claim as the slot believes it: won at `since`, live in the store until `deadline`."""
    __slots__ = ("key", "lane", "since", "deadline")

    def __init__(self, key: Any, lane: int, since: Any, deadline: Any) -> None:
        self.key, self.lane, self.since, self.deadline = key, lane, since, deadline


class _Key:
    __slots__ = ("key", "live", "jobs", "since", "who", "c1", "c2", "c3")

    def __init__(self, key: str, grid: Grid) -> None:
        self.key, self.jobs, self.since = key, 0, 0
        self.live: dict[Any, int] = {}      # attempt -> its lane, for each claim live on the key
        self.who = grid.array(tuple, _top)          # per bucket: up to TOP (ns, lane, attempt, lo, hi)
        self.c1, self.c2, self.c3 = grid.array(int, add), grid.array(int, add), grid.array(int, add)


class Timeline:
    def __init__(self) -> None:
        self.configured = False                      # (by the first run_start's config, or none)
        self.lane_grid = Grid(LANE_BUCKETS, 1)
        self.plot_grid = Grid(PLOT_BUCKETS, 1)
        self.ttl: int | None = None
        self.lanes: list[_Lane] = []
        self.lane_of: dict[Any, int] = {}            # a slot's (or process's) name -> its lane
        self.claims: dict[Any, _Claim] = {}          # attempt -> the claim it believes it holds
        self.jobs: dict[Any, tuple[Any, Any]] = {}   # attempt -> (job start, key)
        self.keys: dict[Any, _Key] = {}
        self.marks: list[dict] = []                  # {lane, t, kind, text}: the first MAX_MARKS
        self.marks_dropped = 0
        self.latency: dict = {}                      # (kind, outcome) -> [Samples per bucket]
        self.rate: dict = {}                         # (kind, outcome) -> [count per bucket]

    def configure(self, config: dict | None) -> None:
        """Size the buckets for the run's planned time (the first run_start's config)."""
        if self.configured:
            return
        self.configured = True
        config = config or {}
        planned = float(config.get("time_limit_s") or 30) * 1.1 + 2
        self.ttl = int(config["ttl_ms"] * 1e6) if config.get("ttl_ms") else None
        self.lane_grid = Grid(LANE_BUCKETS, planned * 1e9 / LANE_BUCKETS)
        self.plot_grid = Grid(PLOT_BUCKETS, planned * 1e9 / PLOT_BUCKETS)

    # -- what the digest feeds ------------------------------------------------------------------
    def call(self, op: Op, error: Any = None) -> None:
        """A lease call that completed (in completion order); `error`: an `info` completion's."""
        if not self.configured:
            self.configure(None)
        t, f, outcome = op.end_time, op.f, op.type
        self._plot(f, outcome, t, (t - op.invoke_time) / 1e6)
        attempt, key = op.attempt, op.key
        lane = self._lane(slot_of(attempt))
        if f == ACQUIRE:
            if outcome == OK and op.value is True:
                self.claims[attempt] = _Claim(key, lane, t, op.invoke_time + self.ttl if self.ttl else None)
                self._holder(key, attempt, lane, t, +1)
        elif f == RENEW:
            c = self.claims.get(attempt)
            if outcome == OK and op.value is True and c is not None and self.ttl:
                self._held(c, t)
                k = self.keys.get(c.key)
                if k is not None:
                    self._key_span(k, t)   # the old deadline up to now
                c.since, c.deadline = t, op.invoke_time + self.ttl
        elif f == RELEASE:
            c = self.claims.get(attempt)
            if c is not None:
                self._held(c, t)
                self._holder(c.key, attempt, lane, t, -1)   # its last stretch, to its deadline
                del self.claims[attempt]
            if outcome == OK and op.value is True:
                self.lanes[lane].releases[self.lane_grid.index(t)] += 1
            elif outcome == OK:
                self._mark(lane, t, "nothing", f"{attempt}: release found nothing of its own on {key}")
            else:
                self._mark(lane, t, "unknown", f"{attempt}: release ended {outcome} "
                                               f"({error or 'outcome unknown'})")

    def job(self, kind: str, t: int, attempt: Any, process: Any, key: Any) -> None:
        """A job_start or job_end event (`kind`) of `attempt` at history time `t`: its `process`
        ("?" where the event has none) and its `key` (None where it has none)."""
        if not self.configured:
            self.configure(None)
        if kind == JOB_START:
            self._lane(process)
            self.jobs[attempt] = (t, key)
            k = self._key(key)
            if k is not None:
                self._key_span(k, t)
                k.jobs += 1
        elif kind == JOB_END:
            started = self.jobs.pop(attempt, None)
            if started is None:
                return
            lane = self._lane(process)
            self.lane_grid.cover(self.lanes[lane].job, started[0], t)
            k = self.keys.get(started[1])
            if k is not None:
                self._key_span(k, t)
                k.jobs -= 1

    # -- lanes and keys ---------------------------------------------------------------------------
    def _lane(self, process: Any) -> int:
        i = self.lane_of.get(process)
        if i is None:
            i = self.lane_of[process] = len(self.lanes)
            self.lanes.append(_Lane(process, self.lane_grid))
        return i

    def _key(self, key: Any) -> _Key | None:
        k = self.keys.get(key)
        if k is None and len(self.keys) < MAX_KEYS and isinstance(key, str):
            k = self.keys[key] = _Key(key, self.lane_grid)
        return k

    def _mark(self, lane: int, t: Any, kind: str, text: str) -> None:
        """Count it in its bucket (every one is drawn there); the first MAX_MARKS also say what they were."""
        getattr(self.lanes[lane], kind)[self.lane_grid.index(t)] += 1
        if len(self.marks) < MAX_MARKS:
            self.marks.append({"lane": lane, "t": t, "kind": kind, "text": text})
        else:
            self.marks_dropped += 1

    def _held(self, c: _Claim, t: Any) -> None:
        """Draw `c` from `since` to `t`: within its TTL, then past it."""
        g, lane = self.lane_grid, self.lanes[c.lane]
        cut = t if c.deadline is None else max(c.since, min(t, c.deadline))
        g.cover(lane.held, c.since, cut)
        g.cover(lane.overdue, cut, t)

    def _holder(self, key: Any, attempt: Any, lane: int, t: Any, delta: int) -> None:
        k = self._key(key)
        if k is None:
            return
        self._key_span(k, t)
        if delta > 0:
            k.live[attempt] = lane
        else:
            k.live.pop(attempt, None)

    def _key_span(self, k: _Key, t: Any) -> None:
        """Account [since, t) of key `k`: its live claims' holders (a claim past its deadline no
        longer holds it), and how many jobs ran on it."""
        t0, g = k.since, self.lane_grid
        k.since = t
        if t <= t0:
            return
        level = k.c1 if k.jobs == 1 else k.c2 if k.jobs == 2 else k.c3 if k.jobs >= 3 else None
        if level is not None:
            g.cover(level, t0, t)
        for attempt, lane in k.live.items():
            c = self.claims.get(attempt)
            end = t if c is None or c.deadline is None else min(t, c.deadline)
            if end <= t0:
                continue
            i, last = g.index(t0), g.index(end - 1)
            w = g.width
            while i <= last:
                lo, hi = max(t0, i * w), min(end, (i + 1) * w)
                k.who[i] = _top_with(k.who[i], (hi - lo, lane, attempt, lo, hi))
                i += 1

    def _plot(self, f: Any, outcome: Any, t: Any, ms: float) -> None:
        g = self.plot_grid
        i = g.index(t)
        series = self.latency.get((f, outcome))
        if series is None:   # made after the grid fits t: same width, no re-index needed
            series = self.latency[(f, outcome)] = g.array(Samples, Samples.merge)
            self.rate[(f, outcome)] = g.array(int, add)
        series[i].add(t, ms)
        self.rate[(f, outcome)][i] += 1

    # -- the end --------------------------------------------------------------------------------
    def drawing(self, end_ns: int, faults: list[dict], run_end: dict | None, events: int,
                victims: Any = (), problems: Any = (), key_prefix: str = "") -> dict:
        """What the report draws (JSON-ready, bounded): `faults` is the checker's fault summary
        (`FaultTracker.summary`), `run_end` the run_end event, `victims` the foreign releases
        (``foreign_releases_first``: ``victim``, ``key``, ``time_s``) whose victim's hold of the key
        ends there. Lanes in name order (w2.s0 before w10.s0). Call it once, at the end."""
        if not self.configured:
            self.configure(None)
        t = end_ns
        for c in self.claims.values():
            self._held(c, t)
            self.lanes[c.lane].open_at_end += 1
        for attempt, (start, _key) in self.jobs.items():
            lane = self.lane_of.get(slot_of(str(attempt)))
            if lane is not None:
                self.lane_grid.cover(self.lanes[lane].job, start, t)
        for k in self.keys.values():
            self._key_span(k, t)
        for v in victims or ():
            victim_key = self.keys.get(v.get("key"))
            if victim_key is not None and v.get("victim"):
                _cut(victim_key, self.lane_grid, v["victim"], int(float(v.get("time_s") or 0) * 1e9))
        order = sorted(range(len(self.lanes)), key=lambda i: _natural(self.lanes[i].name))
        pos = {old: new for new, old in enumerate(order)}
        lg, pg = self.lane_grid, self.plot_grid
        lw, pw = lg.width, pg.width
        n_lane, n_plot = min(lg.n, t // lw + 1), min(pg.n, t // pw + 1)
        shown = sorted(faults or [], key=lambda f: f.get("start_s") or 0)[:MAX_FAULTS]
        return {
            "end_s": t / 1e9,
            "events": events,
            "lane_s": lw / 1e9,
            "lanes": [{"name": lane.name,
                       "held": _runs(_levels(lane.held, lw, n_lane)),
                       "overdue": _runs(_levels(lane.overdue, lw, n_lane)),
                       "job": _runs(_levels(lane.job, lw, n_lane)),
                       "rel": [[i, c] for i, c in enumerate(lane.releases[:n_lane]) if c],
                       "nothing": [[i, c] for i, c in enumerate(lane.nothing[:n_lane]) if c],
                       "unknown": [[i, c] for i, c in enumerate(lane.unknown[:n_lane]) if c],
                       "open": lane.open_at_end} for lane in (self.lanes[i] for i in order)],
            "marks": [dict(m, t=m["t"] / 1e9, lane=pos[m["lane"]]) for m in self.marks],
            "marks_dropped": self.marks_dropped,
            "keys": [{"key": k.key, "short": k.key[len(key_prefix):] if key_prefix and k.key.startswith(key_prefix)
                      else k.key,
                      "holder": [[a, b, pos[v]] for a, b, v in _runs([_winner(w) for w in k.who[:n_lane]], empty=-1)],
                      "jobs": _runs([3 if c3 else 2 if c2 else 1 if c1 else 0
                                     for c1, c2, c3 in zip(k.c1[:n_lane], k.c2[:n_lane], k.c3[:n_lane])])}
                     for k in self.keys.values()],
            "faults": [{"t0": f.get("start_s") or 0.0, "t1": f["end_s"] if f.get("end_s") is not None else t / 1e9,
                        "n": f.get("n"), "fault": f.get("fault"), "target": f.get("target"),
                        "processes": [p for p in (f.get("measured") or {}).get("processes") or []
                                      if isinstance(p, str)],
                        "healed": f.get("end_s") is not None} for f in shown],
            "plot_s": pw / 1e9,
            "latency": {f"{k}:{o}": [[round(t / 1e9, 4), round(ms, 3)] for s in self.latency[(k, o)][:n_plot]
                                     for t, ms in s.points()]
                        for k in KINDS for o in OUTCOMES if (k, o) in self.latency},
            "rate": {f"{k}:{o}": [round(c / (pw / 1e9), 2) for c in self.rate[(k, o)][:n_plot]]
                     for k in KINDS for o in OUTCOMES if (k, o) in self.rate},
            "run_end": run_end and {"reason": run_end.get("reason"), "t": run_end["time"] / 1e9},
            "problems": list(problems),
        }


def _top(a: tuple, b: tuple) -> tuple:
    """The TOP longest holder stretches of two lists (a bucket's and a new piece, or two
    neighbours' when the buckets widen); one attempt's pieces are joined into one stretch."""
    if not a:
        return b[:TOP]
    merged = list(a)
    for x in b:
        for i, y in enumerate(merged):
            if y[2] == x[2]:
                lo, hi = min(x[3], y[3]), max(x[4], y[4])
                merged[i] = (x[0] + y[0], x[1], x[2], lo, hi)
                break
        else:
            merged.append(x)
    if len(merged) > TOP:
        merged.sort(key=lambda x: -x[0])
        del merged[TOP:]
    return tuple(merged)


def _top_with(a: tuple, x: tuple) -> tuple:
    """`_top(a, (x,))` without its copies where it changes nothing else: one new piece `x` joined
    to its attempt's stretch in `a`, or added (the longest TOP kept)."""
    if not a:
        return (x,)
    for i, y in enumerate(a):
        if y[2] == x[2]:
            joined = (x[0] + y[0], x[1], x[2], min(x[3], y[3]), max(x[4], y[4]))
            return a[:i] + (joined,) + a[i + 1:]
    if len(a) < TOP:
        return a + (x,)
    return _top(a, (x,))


def _winner(stretches: tuple) -> int:
    """The lane whose stretch is the longest in the bucket (-1: nobody held the key)."""
    return max(stretches, key=lambda x: x[0])[1] if stretches else -1


def _cut(k: _Key, g: Grid, victim: str, at: int) -> None:
    """End `victim`'s stretches on key `k` at history time `at` (its claim was removed then)."""
    for i in range(g.index(max(0, at)), g.n):
        kept = tuple((min(hi, at) - lo, lane, a, lo, min(hi, at)) if a == victim else (ns, lane, a, lo, hi)
                     for ns, lane, a, lo, hi in k.who[i])
        k.who[i] = tuple(x for x in kept if x[0] > 0)


def _natural(name: str) -> list:
    return [int(p) if p.isdigit() else p for p in re.split(r"(\d+)", name)]


def _levels(values: list, width: int, n: int) -> list[int]:
    """Coverage in ns per bucket as 0 (none), 1 (a little), 2 (some), 3 (most of the bucket)."""
    return [0 if v <= 0 else 3 if v >= 0.75 * width else 2 if v >= 0.25 * width else 1 for v in values[:n]]


def _runs(values: list, empty=0) -> list[list[int]]:
    """[first bucket, last bucket + 1, value] for each run of equal non-empty values."""
    out: list[list[int]] = []
    for i, v in enumerate(values):
        if v == empty:
            continue
        if out and out[-1][1] == i and out[-1][2] == v:
            out[-1][1] = i + 1
        else:
            out.append([i, i + 1, v])
    return out
