"""Read a run's history once, as a stream, into what the report draws — bounded whatever the
run's length: per worker slot (a lane) the time it held a claim (within its TTL, and past it),
ran the job, and released; per job key the holder and how many jobs ran at once; the faults;
latencies and rates per lease call. Everything is kept in time buckets (`grid.Grid`), so a 1-hour
history costs the memory and the drawing of a 20-second one.

The history alone (docs/history.md) is the contract; `foreign` (from results.json) names the
releases that removed someone else's claim, which only the checker knows. Missing events (a
killed run: no release, no job_end, no fault_end, no run_end) leave spans open: they are closed
at the last time the history reached, and said to be open.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from leasecheck.checkers.read.history import HistoryStream

from leasecheck.harness.reports.html.grid import Grid, Samples, add
from leasecheck.events import (
    ACQUIRE, CALLS, COMPLETIONS, FAIL, FAULT_END, FAULT_START, INFO, INVOKE, JOB_END, JOB_START, OK,
    RELEASE, RENEW, RUN_END, TYPE)

LANE_BUCKETS = 1200      # timeline resolution (the width doubles as the run grows)
PLOT_BUCKETS = 400       # latency and rate resolution
MAX_KEYS = 8             # keys drawn with their own holder strip
MAX_MARKS = 2000         # releases that found nothing / ended unknown, each drawn
MAX_FAULTS = 2000
KINDS = CALLS            # acquire, release, renew, effect
OUTCOMES = COMPLETIONS   # ok, fail, info
_EVENT_TYPES = {INVOKE, OK, FAIL, INFO, JOB_START, JOB_END, FAULT_START, FAULT_END, RUN_END}


@dataclass
class Lane:
    name: str
    held: list        # ns of each bucket in which the slot held a claim, within its TTL
    overdue: list     # ... held it past its TTL (the store may have dropped it)
    job: list         # ... ran the job
    releases: list    # releases that found their claim, per bucket
    nothing: list     # releases that found nothing of their own, per bucket
    unknown: list     # releases whose outcome is unknown, per bucket
    open_at_end: int = 0


@dataclass
class Claim:
    """A claim as the slot believes it: won at `since`, live in the store until `deadline`."""
    key: str
    lane: int
    since: int
    deadline: int | None


@dataclass
class Digest:
    lanes: list[Lane] = field(default_factory=list)
    marks: list[dict] = field(default_factory=list)        # {lane, t, kind, text}: the first MAX_MARKS
    marks_dropped: int = 0
    keys: list[dict] = field(default_factory=list)
    faults: list[dict] = field(default_factory=list)
    end_ns: int = 0
    run_end: dict | None = None
    events: int = 0
    problems: list[str] = field(default_factory=list)
    lane_grid: Grid | None = None
    plot_grid: Grid | None = None
    latency: dict = field(default_factory=dict)            # (kind, outcome) -> [Samples per bucket]
    rate: dict = field(default_factory=dict)               # (kind, outcome) -> [count per bucket]


def digest(run_dir, config: dict, foreign: list[dict]) -> Digest:
    """Stream `run_dir`'s history into a `Digest`."""
    planned = float(config.get("time_limit_s") or 30) * 1.1 + 2
    ttl_ns = int(config["ttl_ms"] * 1e6) if config.get("ttl_ms") else None
    d = Digest(lane_grid=Grid(LANE_BUCKETS, planned * 1e9 / LANE_BUCKETS),
               plot_grid=Grid(PLOT_BUCKETS, planned * 1e9 / PLOT_BUCKETS))
    return _Reader(d, ttl_ns, foreign).read(run_dir)


class _Reader:
    def __init__(self, d: Digest, ttl_ns: int | None, foreign: list[dict]) -> None:
        self.d, self.ttl = d, ttl_ns
        self.lane_of: dict[str, int] = {}
        self.pending: dict[str, dict] = {}          # process -> its call in flight (invoke)
        self.claims: dict[str, Claim] = {}          # attempt -> claim it believes it holds
        self.jobs: dict[str, tuple[int, str]] = {}  # attempt -> (job start, key)
        self.keys: dict[str, dict] = {}
        self.faults: dict[int, dict] = {}
        self.victims = {(f.get("victim"), f.get("key")): int(float(f.get("time_s", 0)) * 1e9) for f in foreign}

    def read(self, run_dir) -> Digest:
        stream = HistoryStream(run_dir)
        handlers = {name[1:]: getattr(self, name) for name in dir(self)
                    if name[1:] in _EVENT_TYPES and name.startswith("_")}
        t, n = 0, 0
        for e in stream:
            n += 1
            handler = handlers.get(e.get(TYPE))
            if handler is not None:
                now = int(e.get("time", 0))
                if now > t:
                    t = now
                handler(e, now)
        self.d.events = n
        self.d.problems = list(stream.problems)
        self._close(t)
        return self.d

    # -- lanes ----------------------------------------------------------------------------------
    def _lane(self, process: str) -> int:
        i = self.lane_of.get(process)
        if i is None:
            g = self.d.lane_grid
            i = self.lane_of[process] = len(self.d.lanes)
            self.d.lanes.append(Lane(process, *(g.array(int, add) for _ in range(6))))
        return i

    def _key(self, key: str) -> dict | None:
        k = self.keys.get(key)
        if k is None and len(self.keys) < MAX_KEYS:
            g = self.d.lane_grid
            k = self.keys[key] = {"key": key, "live": {}, "jobs": 0, "since": 0,
                                  "who": g.array(lambda: -1, _first), "who_ns": g.array(int, max),
                                  "c1": g.array(int, add), "c2": g.array(int, add), "c3": g.array(int, add)}
        return k

    def _mark(self, lane: int, t: int, kind: str, text: str) -> None:
        """Count it in its bucket (every one is drawn there); the first MAX_MARKS also say what they were."""
        getattr(self.d.lanes[lane], kind)[self.d.lane_grid.index(t)] += 1
        if len(self.d.marks) < MAX_MARKS:
            self.d.marks.append({"lane": lane, "t": t, "kind": kind, "text": text})
        else:
            self.d.marks_dropped += 1

    # -- events ---------------------------------------------------------------------------------
    def _invoke(self, e: dict, t: int) -> None:
        self.pending[e.get("process", "?")] = e

    def _ok(self, e: dict, t: int) -> None:
        self._completion(e, t, OK)

    def _fail(self, e: dict, t: int) -> None:
        self._completion(e, t, FAIL)

    def _info(self, e: dict, t: int) -> None:
        self._completion(e, t, INFO)

    def _completion(self, e: dict, t: int, outcome: str) -> None:
        process, f, attempt, key = e.get("process", "?"), e.get("f"), e.get("attempt"), e.get("key")
        inv = self.pending.pop(process, None)
        start = int(inv["time"]) if inv and inv.get("f") == f else None
        if start is not None and f in KINDS:
            self._plot(f, outcome, t, (t - start) / 1e6)
        lane = self._lane(process)
        if f == ACQUIRE and outcome == OK and e.get("value") is True:
            deadline = start + self.ttl if start is not None and self.ttl else None
            self.claims[attempt] = Claim(key, lane, t, deadline)
            self._holder(key, attempt, lane, t, +1)
        elif f == RENEW and outcome == OK and e.get("value") is True and attempt in self.claims:
            if start is not None and self.ttl:
                c = self.claims[attempt]
                self._held(c, t)
                if c.key in self.keys:
                    self._key_span(self.keys[c.key], t)   # the old deadline up to now
                c.since, c.deadline = t, start + self.ttl
        elif f == RELEASE:
            c = self.claims.get(attempt)
            if c is not None:
                self._held(c, t)
                self._holder(c.key, attempt, lane, t, -1)
                del self.claims[attempt]
            if outcome == OK and e.get("value") is True:
                g = self.d.lane_grid
                self.d.lanes[lane].releases[g.index(t)] += 1
            elif outcome == OK:
                self._mark(lane, t, "nothing", f"{attempt}: release found nothing of its own on {key}")
            else:
                self._mark(lane, t, "unknown", f"{attempt}: release ended {outcome} "
                                               f"({e.get('error') or 'outcome unknown'})")

    def _held(self, c: Claim, t: int) -> None:
        """Draw `c` from `since` to `t`: within its TTL, then past it."""
        g, lane = self.d.lane_grid, self.d.lanes[c.lane]
        cut = t if c.deadline is None else max(c.since, min(t, c.deadline))
        g.cover(lane.held, c.since, cut)
        g.cover(lane.overdue, cut, t)

    def _job_start(self, e: dict, t: int) -> None:
        self._lane(e.get("process", "?"))
        self.jobs[e.get("attempt")] = (t, e.get("key"))
        k = self._key(e.get("key"))
        if k is not None:
            self._key_span(k, t)
            k["jobs"] += 1

    def _job_end(self, e: dict, t: int) -> None:
        started = self.jobs.pop(e.get("attempt"), None)
        if started is None:
            return
        lane = self._lane(e.get("process", "?"))
        self.d.lane_grid.cover(self.d.lanes[lane].job, started[0], t)
        k = self.keys.get(started[1])
        if k is not None:
            self._key_span(k, t)
            k["jobs"] -= 1

    def _fault_start(self, e: dict, t: int) -> None:
        if len(self.faults) + len(self.d.faults) < MAX_FAULTS:
            self.faults[e.get("n")] = {"n": e.get("n"), "fault": e.get("fault"), "target": e.get("target"),
                                       "t0": t, "t1": None, "processes": [], "healed": False}

    def _fault_end(self, e: dict, t: int) -> None:
        f = self.faults.pop(e.get("n"), None)
        if f is not None:
            measured = e.get("measured") or {}
            f.update(t1=t, healed=True, processes=[p for p in measured.get("processes") or [] if isinstance(p, str)],
                     error=measured.get("error"))
            self.d.faults.append(f)

    def _run_end(self, e: dict, t: int) -> None:
        self.d.run_end = {"reason": e.get("reason"), "t": t}

    # -- key holders ----------------------------------------------------------------------------
    def _holder(self, key: str, attempt: str, lane: int, t: int, delta: int) -> None:
        k = self._key(key)
        if k is None:
            return
        self._key_span(k, t)
        if delta > 0:
            k["live"][attempt] = lane
        else:
            k["live"].pop(attempt, None)

    def _key_span(self, k: dict, t: int) -> None:
        """Account [since, t) of key `k`: its live claim's holder (a claim past its deadline or
        removed by another attempt no longer holds it), and how many jobs ran on it."""
        t0, g = k["since"], self.d.lane_grid
        k["since"] = t
        if t <= t0:
            return
        level = "c1" if k["jobs"] == 1 else "c2" if k["jobs"] == 2 else "c3" if k["jobs"] >= 3 else None
        if level:
            g.cover(k[level], t0, t)
        for attempt, lane in k["live"].items():
            c = self.claims.get(attempt)
            end = t
            if c is not None and c.deadline is not None:
                end = min(end, c.deadline)
            removed = self.victims.get((attempt, k["key"]))
            if removed is not None:
                end = min(end, removed)
            if end <= t0:
                continue
            i, last = g.index(t0), g.index(end - 1)
            while i <= last:   # the holder with the longest stretch in the bucket names it
                ns = min(end, (i + 1) * g.width) - max(t0, i * g.width)
                if ns > k["who_ns"][i]:
                    k["who"][i], k["who_ns"][i] = lane, ns
                i += 1

    # -- plots ----------------------------------------------------------------------------------
    def _plot(self, f: str, outcome: str, t: int, ms: float) -> None:
        g = self.d.plot_grid
        i = g.index(t)
        series = self.d.latency.get((f, outcome))
        if series is None:   # made after the grid fits t: same width, no re-index needed
            series = self.d.latency[(f, outcome)] = g.array(Samples, Samples.merge)
            self.d.rate[(f, outcome)] = g.array(int, add)
        series[i].add(t, ms)
        self.d.rate[(f, outcome)][i] += 1

    # -- the end --------------------------------------------------------------------------------
    def _close(self, t: int) -> None:
        """Close what the history left open (a killed run) at its last time `t`."""
        self.d.end_ns = t
        for attempt, c in self.claims.items():
            self._held(c, t)
            self.d.lanes[c.lane].open_at_end += 1
        for attempt, (start, key) in self.jobs.items():
            lane = self.lane_of.get(attempt.rsplit(".", 1)[0])
            if lane is not None:
                self.d.lane_grid.cover(self.d.lanes[lane].job, start, t)
        for k in self.keys.values():
            self._key_span(k, t)
        for f in self.faults.values():
            f["t1"] = t
            self.d.faults.append(f)
        self.d.faults.sort(key=lambda f: f["t0"])
        self.d.keys = list(self.keys.values())


def _first(a, b):
    return a if a >= 0 else b
