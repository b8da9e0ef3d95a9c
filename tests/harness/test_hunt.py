"""The hunt loop, with a fake run: stop at the first violation, never start a run the budget cannot
finish, exit codes as for a single run, seeds counted up from --seed."""
from pathlib import Path

import pytest

from leasecheck.harness.settings.config import RunConfig
from leasecheck.harness.errors import UsageError
from leasecheck.harness.search.hunt import Outcome, Tally, check_budget, hunt, seeds
from leasecheck.harness.search.hunt_progress import line


def _fake(codes):
    """A run_once answering each run with the next exit code; records the seeds it was given."""
    seen = []

    def run_once(cfg):
        seen.append(cfg.seed)
        code = codes[len(seen) - 1] if len(seen) <= len(codes) else 0
        return Outcome(seed=cfg.seed, run_dir=Path(f"/r/{cfg.seed}"), exit_code=code, near_misses=len(seen) % 3)
    return run_once, seen


def test_stops_at_the_first_violation():
    run_once, seen = _fake([0, 2, 0, 1, 0])
    tally = hunt(RunConfig(seed=40, time_limit_s=0.001), 60, run_once)
    assert seen == [40, 41, 42, 43]
    assert tally.failing.seed == 43 and tally.exit_code == 1
    assert tally.best is tally.failing


def test_the_budget_ends_the_hunt_and_no_run_starts_that_could_not_finish(monkeypatch):
    import leasecheck.harness.search.hunt as h
    clock = iter(range(0, 10000, 10))
    monkeypatch.setattr(h.time, "monotonic", lambda: next(clock))   # each look at the clock: 10 s later
    run_once, seen = _fake([0] * 100)
    tally = hunt(RunConfig(seed=1, time_limit_s=5), 100, run_once, tally=Tally())
    # the clock is read three times a run (budget check, start, end): the checks see 10, 40, 70,
    # 100 s; at 100 s the next run (10 s, the longest so far) would end past the budget
    assert len(seen) == 3, seen
    assert tally.exit_code == 0 and tally.failing is None
    run_once, seen = _fake([2] * 100)
    assert hunt(RunConfig(seed=1, time_limit_s=5), 100, run_once, tally=Tally()).exit_code == 2


def test_an_interrupted_run_ends_the_hunt():
    seen = []

    def run_once(cfg):
        seen.append(cfg.seed)
        return Outcome(seed=cfg.seed, run_dir=Path("/r"), exit_code=2, interrupted=len(seen) == 2)
    tally = hunt(RunConfig(seed=1, time_limit_s=0.001), 60, run_once)
    assert seen == [1, 2] and tally.exit_code == 2


def test_inconclusive_runs_without_a_violation_exit_2():
    run_once, seen = _fake([0, 2] + [0] * 1000)
    tally = Tally()
    tally.runs = [run_once(RunConfig(seed=s)) for s in (1, 2, 3)]
    assert tally.exit_code == 2 and tally.inconclusive == 1 and tally.best.seed == 2


def test_seeds_count_up_from_a_given_one_else_are_fresh():
    given = seeds(7)
    assert [next(given) for _ in range(3)] == [7, 8, 9]
    fresh = seeds(None)
    assert len({next(fresh) for _ in range(5)}) == 5


def test_a_budget_shorter_than_one_run_is_refused():
    with pytest.raises(UsageError, match="--budget 5s is shorter than one run .--time-limit 30s.; raise --budget"):
        check_budget(5, RunConfig())
    with pytest.raises(UsageError, match="greater than 0"):
        check_budget(0, RunConfig())
    check_budget(600, RunConfig())


def test_the_progress_line_says_runs_seeds_elapsed_and_best():
    tally = Tally()
    tally.runs = [Outcome(5, Path("/r/5"), 0, near_misses=2), Outcome(6, Path("/r/6"), 2)]
    text = line(tally, 600)
    assert "2 run(s) (seeds 5, 6)" in text and "of 600 s" in text and "last inconclusive" in text
    assert "best so far: seed 5, 2 near miss(es)" in text
    tally.runs.append(Outcome(9, Path("/r/9"), 1))
    assert "best so far: seed 9 INVALID" in line(tally, 600)


def _covering(counts_per_run, relevant=("holder_past_deadline", "release_at_expiry")):
    """A run_once whose runs are VALID and reach the given hazard counts, one dict per run."""
    from leasecheck.result import Result
    seen = []

    def run_once(cfg):
        counts = counts_per_run[len(seen)] if len(seen) < len(counts_per_run) else {}
        seen.append(cfg.seed)
        result = Result.from_json({"valid": True, "reasons": [],
                                   "hazards": {"counts": counts, "relevant": list(relevant)}}, Path("/r"))
        return Outcome(seed=cfg.seed, run_dir=Path(f"/r/{cfg.seed}"), exit_code=0, result=result)
    return run_once, seen


def test_until_hazards_stops_once_each_relevant_hazard_was_reached_n_times():
    runs = [{"holder_past_deadline": 2, "release_at_expiry": 0}, {"holder_past_deadline": 1, "release_at_expiry": 2},
            {"holder_past_deadline": 5, "release_at_expiry": 1}, {"holder_past_deadline": 9, "release_at_expiry": 9}]
    run_once, seen = _covering(runs)
    tally = hunt(RunConfig(seed=1, time_limit_s=0.001), 60, run_once, tally=Tally(until_hazards=3))
    assert seen == [1, 2, 3]                      # after run 3: 8 holders past deadline, 3 releases at expiry
    assert tally.covered and tally.exit_code == 0
    assert tally.hazards == {"holder_past_deadline": 8, "release_at_expiry": 3}
    # without --until-hazards the hunt goes on to the budget
    run_once, seen = _covering(runs)
    assert not hunt(RunConfig(seed=1, time_limit_s=0.001), 0.05, run_once, tally=Tally()).covered


def test_nemesis_for_the_hunt():
    from leasecheck.harness.search.hunt import nemesis_for
    assert nemesis_for(None, None, None) == "default"
    assert nemesis_for("none", None, None) is None
    assert nemesis_for("pause:holder", None, None) == "pause:holder"
    assert nemesis_for(None, Path("s.toml"), None) is None and nemesis_for(None, None, Path("r")) is None


def test_runs_too_short_for_the_default_mix_hunt_without_faults():
    from leasecheck.harness.search.hunt import short_for_default
    cfg, note = short_for_default(RunConfig(nemesis="default", time_limit_s=2.0, ttl_s=1.0))
    assert cfg.nemesis is None and "leave no room for a pause of the default fault mix" in note
    cfg, note = short_for_default(RunConfig(nemesis="default", time_limit_s=6.0, ttl_s=1.0))
    assert cfg.nemesis == "default" and note is None
