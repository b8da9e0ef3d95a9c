"""The parallel hunt loop, with fake runs that end out of order: its tally is the sequential hunt's
for the same seeds (every run before the first failing seed, then that one), a later seed's run
still going when an earlier one fails is stopped and not counted, Ctrl-C stops every run."""
from pathlib import Path

import pytest

from leasecheck.harness.search.hunt import Outcome, Tally, hunt, hunt_parallel
from leasecheck.harness.settings.config import RunConfig


class FakeRuns:
    """``slots`` runs at once; run ``i`` ends after ``length(seed)`` ticks of a fake clock (so a later
    seed can end first), with the exit code ``codes.get(seed, 0)``."""

    def __init__(self, slots, codes, length=lambda seed: 1 + seed % 3):
        self.slots, self.codes, self.length = slots, codes, length
        self.going: dict[int, tuple[int, int]] = {}     # index -> (end tick, seed)
        self.now = 0
        self.started: list[int] = []
        self.stopped: list[int] = []
        self.most_at_once = 0

    def free(self):
        return self.slots - len(self.going)

    def running(self):
        return len(self.going)

    def start(self, index, cfg):
        self.started.append(cfg.seed)
        self.going[index] = (self.now + self.length(cfg.seed), cfg.seed)
        self.most_at_once = max(self.most_at_once, len(self.going))

    def stop(self, index):
        self.stopped.append(index)
        end, seed = self.going[index]
        self.going[index] = (self.now, seed)            # a stopped run ends at once, interrupted

    def next(self):
        index = min(self.going, key=lambda i: (self.going[i][0], i))
        end, seed = self.going.pop(index)
        interrupted = index in self.stopped
        self.now = max(self.now, end)
        code = 2 if interrupted else self.codes.get(seed, 0)
        return index, Outcome(seed=seed, run_dir=Path(f"/r/{seed}"), exit_code=code, interrupted=interrupted)


def _sequential(codes, first):
    def run_once(cfg):
        return Outcome(seed=cfg.seed, run_dir=Path(f"/r/{cfg.seed}"), exit_code=codes.get(cfg.seed, 0))
    return hunt(RunConfig(seed=first, time_limit_s=0.001), 60, run_once)


@pytest.mark.parametrize("slots", [1, 2, 3, 5])
@pytest.mark.parametrize("codes", [{45: 1}, {41: 2, 44: 1, 46: 1}, {40: 1}, {43: 1, 42: 1}])
def test_the_tally_is_the_sequential_hunts_for_the_same_seeds(slots, codes):
    runs = FakeRuns(slots, codes)
    heard = []
    tally = hunt_parallel(RunConfig(seed=40, time_limit_s=0.001), 60, runs,
                          on_run=lambda t: heard.append([o.seed for o in t.runs]))
    alone = _sequential(codes, 40)
    assert [(o.seed, o.exit_code) for o in tally.runs] == [(o.seed, o.exit_code) for o in alone.runs]
    assert tally.failing.seed == alone.failing.seed and tally.exit_code == alone.exit_code == 1
    assert heard == [[o.seed for o in alone.runs[:n]] for n in range(1, len(alone.runs) + 1)]   # in seed order
    assert runs.most_at_once == min(slots, len(runs.started))
    assert not runs.going                                     # nothing left running
    # seeds drawn in order, each run once
    assert runs.started == list(range(40, 40 + len(runs.started)))


def test_an_earlier_seed_failing_after_a_later_one_is_the_one_reported():
    # seed 40 takes long and fails; seed 41 fails first: the hunt waits for 40 and reports it
    runs = FakeRuns(2, {40: 1, 41: 1}, length=lambda seed: 10 if seed == 40 else 1)
    tally = hunt_parallel(RunConfig(seed=40, time_limit_s=0.001), 60, runs)
    assert [o.seed for o in tally.runs] == [40] and tally.failing.seed == 40


def test_no_run_starts_that_the_budget_could_not_finish(monkeypatch):
    import leasecheck.harness.search.hunt as h
    clock = iter(range(0, 10000, 10))
    monkeypatch.setattr(h.time, "monotonic", lambda: next(clock))   # each look at the clock: 10 s later
    runs = FakeRuns(2, {})
    tally = hunt_parallel(RunConfig(seed=1, time_limit_s=5), 100, runs, tally=Tally())
    assert tally.failing is None and tally.exit_code == 0
    assert 0 < len(runs.started) < 100 and len(tally.runs) == len(runs.started)


class Interrupting(FakeRuns):
    """Ctrl-C arrives while the third run is waited for."""

    def next(self):
        if len(self.started) >= 3 and not self.stopped:
            raise KeyboardInterrupt
        return super().next()


def test_ctrl_c_stops_every_run_and_ends_the_hunt_at_the_first_of_them():
    runs = Interrupting(3, {})
    tally = hunt_parallel(RunConfig(seed=1, time_limit_s=0.001), 60, runs)
    assert sorted(runs.stopped) == [0, 1, 2] and not runs.going
    assert [o.seed for o in tally.runs] == [1] and tally.runs[-1].interrupted
    assert tally.exit_code == 2
