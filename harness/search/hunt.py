"""``leasecheck hunt``: the same scenario again and again, a fresh seed each time, until the first
violation or the time budget — or, with ``--until-hazards N``, until every hazard relevant to the
lease (``results.json`` ``hazards.relevant``) was reached N times over the hunt's runs.
Without ``--nemesis``, a scenario or ``--replay`` it hunts under the ``default`` fault mix
(``leasecheck.harness.nemesis.mixes``); ``--nemesis none`` hunts without faults.

A bug that needs one fault at one instant may not show in one run; many short runs with fresh
seeds (new job durations, new fault times, new targets) try many instants. The loop stops at the
first INVALID run, which is then replayable from its own run directory (its ``config.json``
holds the seed, its ``schedule.json`` the faults). It never starts a run the budget cannot let
finish: a run cut short by the budget would prove nothing.

The loop knows nothing of processes or terminals: ``run_once(cfg)`` carries out one run and
returns its ``Outcome``, ``on_run`` hears about each one (the CLI draws the progress line). So it
is tested with a fake ``run_once``.

``hunt_parallel`` is the same hunt with several runs at once (``--parallel N``, ``--cluster``): the
seeds are drawn in the same order and the tally is what the sequential hunt would have recorded
for them — the runs of the seeds before the first failing one, then that one. A run of a later
seed, started while an earlier one was still going, is stopped when the earlier one fails and is
not counted (the sequential hunt would never have started it); its directory stays.
"""
from __future__ import annotations

import random
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterator, Protocol

from leasecheck.harness.nemesis import mixes
from leasecheck.harness.settings.config import RunConfig
from leasecheck.harness.errors import UsageError
from leasecheck.result import Result

EXIT_VALID, EXIT_INVALID, EXIT_UNKNOWN = 0, 1, 2
DEFAULT_NEMESIS = "default"   # hunt's faults when neither --nemesis nor a scenario nor --replay says any
NO_FAULTS = "none"


def short_for_default(cfg: RunConfig) -> tuple[RunConfig, str | None]:
    """A hunt given no faults draws the default mix; runs too short for one of its pauses hunt
    without faults instead, with a note saying so (a mix the user never named is no reason to refuse)."""
    if cfg.nemesis != DEFAULT_NEMESIS or cfg.schedule is not None or mixes.fits(cfg):
        return cfg, None
    return cfg.with_(nemesis=None), (f"runs of {cfg.time_limit_s:g} s with --ttl {cfg.ttl_s:g}s leave no room for a pause "
                                     "of the default fault mix: hunting without faults (raise --time-limit, or name "
                                     "--nemesis)")


def nemesis_for(nemesis, scenario, replay):
    """The hunt's ``--nemesis``: as given; the ``default`` mix when nothing names faults (no
    ``--nemesis``, no scenario, no ``--replay``); None (no faults) for ``none``."""
    if isinstance(nemesis, str) and nemesis.strip() == NO_FAULTS:
        return None
    if not nemesis and scenario is None and replay is None:
        return DEFAULT_NEMESIS
    return nemesis


@dataclass(frozen=True)
class Outcome:
    """One run of the hunt."""
    seed: int
    run_dir: Path | None    # None: the run never produced a directory here (its host was lost)
    exit_code: int          # as ``leasecheck run``: 0 valid, 1 invalid, 2 inconclusive
    near_misses: int = 0    # claims lost before their holder released them, overlaps: how close it came
    reason: str = ""        # the verdict's first reason, in one line
    elapsed_s: float = 0.0
    interrupted: bool = False   # Ctrl-C or SIGTERM ended this run: the hunt ends with it
    result: Result | None = None   # its checked result (None in the loop's own tests)
    parts: list | None = None      # (name, Part) per property, when asked for (JUnit): from the one check


@dataclass
class Tally:
    """What the hunt has done so far (the progress line and the final report read it)."""
    started: float = field(default_factory=lambda: time.monotonic())
    runs: list[Outcome] = field(default_factory=list)
    ended: float | None = None      # when the hunt's last run ended (what came after is not the hunt's)
    until_hazards: int | None = None     # --until-hazards N: stop once each relevant hazard reached N times

    @property
    def hazards(self) -> dict[str, int]:
        """Each hazard's count summed over the runs (results.json ``hazards.counts``)."""
        total: dict[str, int] = {}
        for o in self.runs:
            for name, n in _hazards(o).get("counts", {}).items():
                total[name] = total.get(name, 0) + n
        return total

    @property
    def relevant(self) -> list[str]:
        """The hazards relevant to the lease in any run (``hazards.relevant``), in order."""
        return list(dict.fromkeys(h for o in self.runs for h in _hazards(o).get("relevant", [])))

    @property
    def covered(self) -> bool:
        """--until-hazards N: every relevant hazard reached at least N times over the hunt."""
        if self.until_hazards is None or not self.runs:
            return False
        total = self.hazards
        return bool(self.relevant) and all(total.get(h, 0) >= self.until_hazards for h in self.relevant)

    @property
    def elapsed_s(self) -> float:
        return (self.ended if self.ended is not None else time.monotonic()) - self.started

    @property
    def failing(self) -> Outcome | None:
        return next((o for o in self.runs if o.exit_code == EXIT_INVALID), None)

    @property
    def inconclusive(self) -> int:
        return sum(1 for o in self.runs if o.exit_code not in (EXIT_VALID, EXIT_INVALID))

    @property
    def best(self) -> Outcome | None:
        """The failing run, else the run that came closest (most near misses)."""
        if self.failing:
            return self.failing
        return max(self.runs, key=lambda o: o.near_misses, default=None)

    @property
    def exit_code(self) -> int:
        if self.failing:
            return EXIT_INVALID
        return EXIT_UNKNOWN if self.inconclusive or not self.runs else EXIT_VALID


def check_budget(budget_s: float, cfg: RunConfig, said: str = "--budget") -> None:
    """Bad input before anything starts: a budget that cannot hold one run."""
    if not budget_s > 0:
        raise UsageError(f"{said} {budget_s:g}s: the budget must be greater than 0, e.g. --budget 10m")
    if budget_s < cfg.time_limit_s:
        raise UsageError(f"{said} {budget_s:g}s is shorter than one run (--time-limit {cfg.time_limit_s:g}s); "
                         f"raise {said} or lower --time-limit")


def seeds(first: int | None) -> Iterator[int]:
    """``first``, ``first + 1``, ... when a seed was given (a hunt that can be repeated), else fresh
    random seeds."""
    if first is not None:
        n = first
        while True:
            yield n
            n += 1
    rng = random.SystemRandom()
    while True:
        yield rng.randrange(2**31)


def hunt(cfg: RunConfig, budget_s: float, run_once: Callable[[RunConfig], Outcome],
         on_run: Callable[[Tally], None] = lambda tally: None, tally: Tally | None = None) -> Tally:
    """Run ``cfg`` with fresh seeds until a run is INVALID or interrupted, each relevant hazard
    was reached ``tally.until_hazards`` times (when set), or the next run would
    not finish within ``budget_s`` (judged by the longest run so far, and at least ``--time-limit``).
    ``tally``: where to count (a progress line may be watching it)."""
    tally = tally if tally is not None else Tally()
    longest = cfg.time_limit_s
    for seed in seeds(cfg.seed):
        if tally.elapsed_s + longest > budget_s:
            break
        t = time.monotonic()
        outcome = run_once(cfg.with_(seed=seed))
        longest = max(longest, time.monotonic() - t)
        tally.runs.append(outcome)
        on_run(tally)
        if outcome.exit_code == EXIT_INVALID or outcome.interrupted or tally.covered:
            break
    tally.ended = time.monotonic()
    return tally


class Runs(Protocol):
    """Several runs at once, for `hunt_parallel` (the API adapts a `pool.Pool` to it)."""
    def free(self) -> int: ...                                   # runs that could start now
    def running(self) -> int: ...
    def start(self, index: int, cfg: RunConfig) -> None: ...     # the index-th seed's run
    def next(self) -> tuple[int, Outcome]: ...                   # the next run to end (blocks)
    def stop(self, index: int) -> None: ...                      # stop as on Ctrl-C; it still ends


def hunt_parallel(cfg: RunConfig, budget_s: float, runs: Runs,
                  on_run: Callable[[Tally], None] = lambda tally: None, tally: Tally | None = None) -> Tally:
    """`hunt`, with up to ``runs.free()`` runs at once. A run starts only while the budget can hold
    it (judged, as `hunt` does, by the longest run so far); ``tally.runs`` grows in seed order, so
    ``on_run`` hears a run only once every earlier seed's run has ended. Ctrl-C stops every run
    still going (each keeps its history) and ends the hunt at the first of them."""
    tally = tally if tally is not None else Tally()
    longest = cfg.time_limit_s
    draw = seeds(cfg.seed)
    going: set[int] = set()
    ended: dict[int, Outcome] = {}
    stop_at: int | None = None      # the first run (in seed order) that ends the hunt
    stopped: set[int] = set()
    started = 0

    def stop(indices) -> None:
        for i in sorted(set(indices) - stopped):
            stopped.add(i)
            runs.stop(i)

    def ends(index: int) -> None:
        nonlocal stop_at
        if stop_at is None or index < stop_at:
            stop_at = index
            stop(i for i in going if i > index)
    try:
        while True:
            try:
                while (stop_at is None and runs.free() > 0
                       and tally.elapsed_s + longest <= budget_s):
                    runs.start(started, cfg.with_(seed=next(draw)))
                    going.add(started)
                    started += 1
                if not going:
                    break
                index, outcome = runs.next()
            except KeyboardInterrupt:
                if not going:
                    raise
                ends(min(going))
                stop(going)
                continue
            going.discard(index)
            longest = max(longest, outcome.elapsed_s)
            if stop_at is not None and index > stop_at:
                continue            # started before an earlier seed failed: not part of the hunt
            ended[index] = outcome
            if outcome.exit_code == EXIT_INVALID or outcome.interrupted:
                ends(index)
            while len(tally.runs) in ended and (stop_at is None or len(tally.runs) <= stop_at):
                tally.runs.append(ended.pop(len(tally.runs)))
                on_run(tally)
                if tally.covered:    # --until-hazards: the runs so far did what the lease needs tested
                    ends(len(tally.runs) - 1)
    except BaseException:
        stop(going)                  # a harness failure: nothing is left running behind the caller
        while going:
            going.discard(runs.next()[0])
        raise
    tally.ended = time.monotonic()
    return tally


def _hazards(o: Outcome) -> dict:
    return ((o.result.data if o.result is not None else {}) or {}).get("hazards") or {}
