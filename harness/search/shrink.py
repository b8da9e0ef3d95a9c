"""``leasecheck shrink``: from a failing run, a smaller configuration that still fails.

Smaller means, in this order: fewer faults, the faults earlier in the run, shorter faults, fewer
workers, a shorter time limit. Each reduction is a *candidate*; a candidate is kept only when it
still fails, and "fails" is a vote: real processes are not deterministic (the same seed gives the
same job durations and fault targets, not the same interleaving), so a candidate is replayed up
to ``replays`` times (default 3) and fails when ``must_fail`` of them (default 2) fail. The vote
stops as soon as its outcome is decided (2 failures, or 2 passes out of 3), so a clear candidate
costs two replays.

Why delta debugging and not Hypothesis. Hypothesis shrinks a *choice sequence* against a test
that is cheap (milliseconds) and deterministic: it tries hundreds of variants, and a failing
example that then passes is an error to it (``Flaky``), not a data point. Here one test is a real
run of seconds to a minute, a failure shows in 2 of 3 replays rather than always, and a budget of
minutes allows a few dozen replays. Zeller's ddmin over the list of faults that fired needs about
``2 log2(n)`` candidates to find one fault that matters among n (the usual case), at most
``n^2`` in the worst case, tries whole sub-schedules that are each a meaningful incident, and
lets every candidate be voted on; the later passes (earlier, shorter, fewer workers, shorter
limit) are one-dimensional, where halving is all a search needs.

Every candidate's time limit is cut to just past its last fault plus ``tail_s`` (a lease lifetime
and the longest job: enough for a stalled holder to wake up and delete), never beyond the recorded
limit, so dropping the late faults also makes the replays shorter. The whole search is bounded by
``budget_s``: no replay starts that could not end within it (judged by the replays so far), and
the smallest failing candidate found by then is the result.

The smallest candidate is then voted on again, all ``replays`` of it: shrinking walks to the
edge of failing (the shortest pause that still breaks the lease), where a candidate can win its
vote by luck. The confirmed rate is the one printed; a candidate that fails its confirmation
gives way to the one before it, and in the end to the recorded run itself. The search keeps
room in the budget for that confirmation, and keeps it wide (``ReplayEstimate``): a replay's
length beyond its time limit (start, stop, check) is measured on earlier replays, and a busy
machine can make the later ones slower than any of those.

This module runs nothing: ``replay(candidate)`` carries out one run and says whether it failed
(``leasecheck.harness.search.shrink_run`` does it with real processes), ``on_replay`` hears about each one (the
progress line). So the search is tested with a fake ``replay``.
"""
from __future__ import annotations

import json
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Callable

from leasecheck.harness.faults.base import Step

# ``leasecheck shrink`` exit codes (also in the README and --help).
EXIT_SMALLER = 0        # a smaller candidate failed the vote: it is written as a scenario
EXIT_NOT_SMALLER = 1    # the recorded run still fails the vote, but nothing smaller does
EXIT_UNKNOWN = 2        # no candidate failed the vote (the failure did not reproduce, or the budget ran out)


@dataclass(frozen=True)
class Fault:
    """One fault of a candidate: the recorded step ``n`` (its number in ``schedule.json``), as
    the candidate has it now (perhaps moved or shortened)."""
    n: int
    step: Step

    @property
    def end(self) -> float:
        return self.step.at + self.step.duration

    def label(self) -> str:
        return f"{self.step.fault}:{self.step.target} at {self.step.at:g} s ({self.step.duration:g} s)"


@dataclass(frozen=True)
class Candidate:
    """What a replay varies: the faults, the worker processes and the time limit (everything
    else — lease, TTL, seed, job durations — stays as recorded)."""
    faults: tuple[Fault, ...]
    workers: int
    time_limit_s: float

    @property
    def last_end(self) -> float:
        return max((f.end for f in self.faults), default=0.0)

    def key(self) -> str:
        return json.dumps([[f.n, f.step.to_json()] for f in self.faults] + [self.workers, self.time_limit_s],
                          sort_keys=True)

    def describe(self) -> str:
        return f"{len(self.faults)} fault(s), {self.workers} worker(s), {self.time_limit_s:g} s"


@dataclass(frozen=True)
class Replayed:
    """One replay of a candidate."""
    failed: bool               # it failed the way the recorded run did
    exit_code: int             # as ``leasecheck run``: 0 valid, 1 invalid, 2 inconclusive
    run_dir: Path | None = None
    elapsed_s: float = 0.0
    interrupted: bool = False  # Ctrl-C or SIGTERM ended it: the search ends with it
    reason: str = ""


@dataclass
class Trial:
    """One candidate and its vote."""
    candidate: Candidate
    stage: str          # faults, earlier, shorter, workers, time limit; confirm, recorded (full votes)
    replays: list[Replayed] = field(default_factory=list)
    failing: bool | None = None             # None: the vote was cut short (budget, interruption)

    @property
    def failed(self) -> int:
        return sum(r.failed for r in self.replays)

    def rate(self) -> str:
        return f"{self.failed} of {len(self.replays)}"


@dataclass(frozen=True)
class Policy:
    replays: int = 3             # n: replays per candidate at most
    must_fail: int = 2           # k: a candidate fails when k of its replays fail
    budget_s: float = 600.0
    tail_s: float = 3.0          # kept after the last fault (a TTL and the longest job, plus a second)
    lead_s: float = 1.0          # the earliest a fault may start (the workers hold claims by then)
    min_duration_s: float = 0.1  # no fault is shortened below this
    halvings: int = 3            # at most this many halvings per fault, and of the time margin
    min_claimers: int = 2        # workers x slots never below this: a lease needs two to be broken
    slots: int = 1


@dataclass
class ReplayEstimate:
    """How long a replay of a candidate takes: its time limit plus the overhead beyond it (starting
    the store and the workers, stopping, checking), the longest measured so far.

    Two readings. ``likely_s`` decides whether a confirming replay may start (the budget's
    promise: none starts that could not end within it, judged by the replays so far).
    ``safe_s`` counts the search's own replays and the room kept after them for the confirming
    replays: the overhead measured early, on a quieter machine, is no bound for later replays
    (another run's load can double it), so it counts ``margin`` times the longest overhead, and
    at least ``floor_s`` before anything has been measured. Without that slack a loaded machine
    once spent the room kept on slower search replays (16 replays in 115 s) and left the result
    unconfirmed."""
    margin: float = 2.0
    floor_s: float = 2.0
    overhead_s: float = 0.0         # the longest replay beyond its time limit so far
    seen: int = 0

    def observe(self, time_limit_s: float, elapsed_s: float) -> None:
        """One replay of ``time_limit_s`` took ``elapsed_s`` from start to verdict."""
        self.overhead_s = max(self.overhead_s, elapsed_s - time_limit_s)
        self.seen += 1

    def likely_s(self, time_limit_s: float) -> float:
        return time_limit_s + self.overhead_s

    def safe_s(self, time_limit_s: float) -> float:
        return time_limit_s + max(self.floor_s, self.margin * self.overhead_s)


class _Stop(Exception):
    """The budget cannot fit another replay, or a replay was interrupted."""


@dataclass
class Search:
    """The state of one shrink (the progress line reads it while it goes)."""
    recorded: Candidate
    policy: Policy
    replay: Callable[[Candidate], Replayed]
    on_replay: Callable[["Search"], None] = lambda search: None
    clock: Callable[[], float] = time.monotonic
    trials: list[Trial] = field(default_factory=list)
    accepted: list[Trial] = field(default_factory=list)   # each smaller candidate that failed its vote
    chosen: Trial | None = None              # the confirmed result (``stage`` confirm or recorded)
    ended: str = ""                          # done, budget, interrupted
    started: float = 0.0
    estimate: ReplayEstimate = field(default_factory=ReplayEstimate)
    _seen: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.started = self.clock()

    @property
    def elapsed_s(self) -> float:
        return self.clock() - self.started

    @property
    def current(self) -> Trial | None:
        return self.trials[-1] if self.trials else None

    @property
    def replay_count(self) -> int:
        return sum(len(t.replays) for t in self.trials)

    @property
    def best_trial(self) -> Trial | None:
        return self.accepted[-1] if self.accepted else None

    @property
    def best(self) -> Candidate | None:
        """The smallest candidate that failed its vote so far."""
        return self.accepted[-1].candidate if self.accepted else None

    # -- the vote ----------------------------------------------------------------------------
    def _replay(self, cand: Candidate, trial: Trial, reserve_s: float | None = None) -> None:
        """One replay into ``trial``, if the budget can still hold it. A search replay keeps
        ``reserve_s`` free after it and is counted at its safe length, so a replay slower than
        the ones before does not eat into that room; a confirming replay (``reserve_s`` None,
        the search's last) is counted at its likely length."""
        est = self.estimate
        need = est.likely_s(cand.time_limit_s) if reserve_s is None else est.safe_s(cand.time_limit_s) + reserve_s
        if self.elapsed_s + need > self.policy.budget_s:
            raise _Stop("budget")
        t = self.clock()
        r = self.replay(cand)
        self.estimate.observe(cand.time_limit_s, self.clock() - t)
        trial.replays.append(r)
        self.on_replay(self)
        if r.interrupted:
            raise _Stop("interrupted")

    def fails(self, cand: Candidate, stage: str) -> bool:
        """Replay ``cand`` until the vote is decided (k failures, or too many passes for k); a
        failing candidate becomes the best. The budget always keeps room to confirm the best."""
        if cand.key() in self._seen:
            return self._seen[cand.key()]
        trial = Trial(cand, stage)
        self.trials.append(trial)
        p = self.policy
        while trial.failing is None:
            passed = len(trial.replays) - trial.failed
            if trial.failed >= p.must_fail:
                trial.failing = True
            elif passed > p.replays - p.must_fail:
                trial.failing = False
            else:
                # room to confirm whichever is the best after this vote: this one or the last
                widest = max(cand.time_limit_s, self.best.time_limit_s if self.best else 0.0)
                self._replay(cand, trial, p.replays * self.estimate.safe_s(widest))
        self._seen[cand.key()] = trial.failing
        if trial.failing:
            self.accepted.append(trial)
        return trial.failing

    def _confirm(self) -> None:
        """Vote again on the result, all ``replays`` of it, so the rate printed is measured and
        not the lucky streak that chose it (shrinking walks to the edge of failing, where luck
        decides votes). If the smallest fails this, the one before it is tried, then the
        recorded run itself."""
        for cand in [t.candidate for t in reversed(self.accepted)] + [self.recorded]:
            trial = Trial(cand, "recorded" if cand is self.recorded else "confirm")
            self.trials.append(trial)
            for _ in range(self.policy.replays):
                self._replay(cand, trial)
            trial.failing = trial.failed >= self.policy.must_fail
            if trial.failing:
                self.chosen = trial
                return
            if self.accepted and cand is self.accepted[-1].candidate:
                self.accepted.pop()          # refuted: never the result, even unconfirmed

    # -- the passes --------------------------------------------------------------------------
    def run(self) -> "Search":
        self.started = self.clock()
        try:
            for stage in (self._fewer_faults, self._earlier, self._shorter, self._fewer_workers,
                          self._shorter_limit):
                stage()
        except _Stop as e:
            self.ended = str(e)
        if self.ended != "interrupted":      # the budget kept room for this
            try:
                self._confirm()
            except _Stop as e:
                self.ended = self.ended or str(e)
        self.ended = self.ended or "done"
        return self

    @property
    def now(self) -> Candidate:
        """The candidate every pass starts from: the best so far, else the recorded run."""
        return self.best or self.recorded

    def fit(self, faults: tuple[Fault, ...], limit: float | None = None) -> float:
        """The time limit for ``faults``: just past the last one (``tail_s`` after it), never
        above ``limit`` (default: the current candidate's)."""
        limit = self.now.time_limit_s if limit is None else limit
        last = max((f.end for f in faults), default=0.0)
        return round(min(limit, last + self.policy.tail_s), 3)

    def _with(self, faults: tuple[Fault, ...], **changes) -> Candidate:
        return replace(self.now, faults=faults, time_limit_s=self.fit(faults), **changes)

    def _fewer_faults(self) -> None:
        """ddmin over the faults (no fault at all first: perhaps none is needed)."""
        faults = self.now.faults
        if not faults:
            return
        if self.fails(self._with(()), "faults"):
            return
        n = 2
        while len(faults) >= 2:
            chunks = _split(faults, n)
            reduced = False
            for chunk in chunks:                       # one part alone
                if self.fails(self._with(chunk), "faults"):
                    faults, n, reduced = chunk, 2, True
                    break
            if not reduced and n > 2:
                for i in range(len(chunks)):           # everything but one part
                    rest = tuple(f for j, c in enumerate(chunks) if j != i for f in c)
                    if self.fails(self._with(rest), "faults"):
                        faults, n, reduced = rest, max(n - 1, 2), True
                        break
            if not reduced:
                if n >= len(faults):
                    break
                n = min(len(faults), 2 * n)

    def _earlier(self) -> None:
        """Move the whole timeline earlier (the first fault at ``lead_s``), or half as far."""
        faults = self.now.faults
        if not faults:
            return
        shift = min(f.step.at for f in faults) - self.policy.lead_s
        for _ in range(2):
            if shift < 0.5:
                return
            moved = tuple(Fault(f.n, replace(f.step, at=round(f.step.at - shift, 3))) for f in faults)
            if self.fails(replace(self.now, faults=moved,
                                  time_limit_s=self.fit(moved, self.now.time_limit_s - shift)), "earlier"):
                return
            shift /= 2

    def _shorter(self) -> None:
        """Halve each fault's duration while the candidate still fails."""
        for i in range(len(self.now.faults)):
            for _ in range(self.policy.halvings):
                faults = self.now.faults
                f = faults[i]
                shorter = round(f.step.duration / 2, 3)
                if shorter < self.policy.min_duration_s:
                    break
                changed = faults[:i] + (Fault(f.n, replace(f.step, duration=shorter)),) + faults[i + 1:]
                if not self.fails(self._with(changed), "shorter"):
                    break

    def _fewer_workers(self) -> None:
        """Halve the worker processes while the candidate still fails (never below two claimers)."""
        p = self.policy
        while True:
            fewer = self.now.workers // 2
            if fewer < 1 or fewer * p.slots < p.min_claimers:
                return
            if not self.fails(replace(self.now, workers=fewer), "workers"):
                return

    def _shorter_limit(self) -> None:
        """Halve the time kept after the last fault (or the whole limit, with no fault)."""
        for _ in range(self.policy.halvings):
            cand = self.now
            margin = cand.time_limit_s - cand.last_end
            if margin / 2 < 0.5:
                return
            if not self.fails(replace(cand, time_limit_s=round(cand.last_end + margin / 2, 3)), "time limit"):
                return

    # -- the outcome -------------------------------------------------------------------------
    @property
    def result(self) -> Trial | None:
        """The candidate to write, with its vote: the confirmed one; if the budget or an
        interruption stopped the search first, the smallest that failed its vote (unconfirmed)."""
        if self.chosen is not None:
            return self.chosen
        if self.ended != "done" and self.accepted:
            return self.accepted[-1]
        return None

    @property
    def confirmed(self) -> bool:
        return self.chosen is not None

    @property
    def exit_code(self) -> int:
        found = self.result
        if found is None:
            return EXIT_UNKNOWN
        return EXIT_NOT_SMALLER if found.stage == "recorded" else EXIT_SMALLER


def _split(items: tuple, n: int) -> list[tuple]:
    """``items`` in ``n`` contiguous parts of nearly equal size."""
    size, extra = divmod(len(items), n)
    parts, start = [], 0
    for i in range(n):
        end = start + size + (1 if i < extra else 0)
        parts.append(items[start:end])
        start = end
    return [p for p in parts if p]


def changes(recorded: Candidate, best: Candidate, not_fired: list[Step] = ()) -> list[str]:
    """What shrinking removed, one line each: faults dropped, moved, shortened, fewer workers,
    the time limit."""
    out = [f"removed {s.fault}:{s.target} at {s.at:g} s: it never fired in the recorded run" for s in not_fired]
    kept = {f.n: f for f in best.faults}
    for f in recorded.faults:
        if f.n not in kept:
            out.append(f"removed {f.label()}")
    for f in recorded.faults:
        g = kept.get(f.n)
        if g is None:
            continue
        if g.step.at != f.step.at:
            out.append(f"moved {f.step.fault}:{f.step.target} from {f.step.at:g} s to {g.step.at:g} s")
        if g.step.duration != f.step.duration:
            out.append(f"shortened {f.step.fault}:{f.step.target} from {f.step.duration:g} s to {g.step.duration:g} s")
    if best.workers != recorded.workers:
        out.append(f"workers {recorded.workers} -> {best.workers}")
    if best.time_limit_s != recorded.time_limit_s:
        out.append(f"time limit {recorded.time_limit_s:g} s -> {best.time_limit_s:g} s")
    return out
