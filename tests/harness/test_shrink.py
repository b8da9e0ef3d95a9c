"""The shrink search with a fake replay: it finds the faults that matter (one or a pair), moves
and shortens them, drops workers and time, votes k of n on flaky replays, stops at the budget."""
from __future__ import annotations

import itertools
from pathlib import Path

from leasecheck.harness.faults.base import Step
from leasecheck.harness.search.shrink import (EXIT_NOT_SMALLER, EXIT_SMALLER, EXIT_UNKNOWN, Candidate, Fault, Policy, Replayed,
                            ReplayEstimate, Search, changes)

KINDS = ["latency", "kill", "pause", "clock", "partition", "pause", "clock", "latency"]


def recorded(n_faults=8, workers=8, limit=60.0) -> Candidate:
    """A 60 s run with a fault every 7 s, each lasting 2 s."""
    faults = tuple(Fault(i, Step(at=2.0 + 7 * i, fault=KINDS[i % len(KINDS)], target="x", duration=2.0))
                   for i in range(n_faults))
    return Candidate(faults, workers, limit)


class Fake:
    """A replay that fails when ``needed(candidate)``; ``noise``: the replays' pattern of
    failures, cycled per candidate (a flaky process), for a failing and a passing candidate."""

    def __init__(self, needed, fail_pattern=(True,), pass_pattern=(False,)):
        self.needed, self.fail_pattern, self.pass_pattern = needed, fail_pattern, pass_pattern
        self.calls: list[Candidate] = []
        self._cycles: dict = {}

    def __call__(self, cand: Candidate) -> Replayed:
        self.calls.append(cand)
        pattern = self.fail_pattern if self.needed(cand) else self.pass_pattern
        it = self._cycles.setdefault((cand.key(), pattern), itertools.cycle(pattern))
        failed = next(it)
        return Replayed(failed=failed, exit_code=1 if failed else 0, run_dir=Path("/r"))


def has(cand: Candidate, n: int, min_duration: float = 0.0) -> bool:
    """Fault ``n`` is in the candidate, lasts ``min_duration`` or more and is inside the time limit."""
    return any(f.n == n and f.step.duration >= min_duration and f.end <= cand.time_limit_s for f in cand.faults)


def test_finds_the_one_fault_that_matters_and_makes_it_small():
    fake = Fake(lambda c: has(c, 5, min_duration=0.5) and c.workers >= 2)
    s = Search(recorded(), Policy(tail_s=3.0), fake).run()
    assert s.exit_code == EXIT_SMALLER and s.ended == "done"
    best = s.best
    assert [f.n for f in best.faults] == [5]
    assert best.faults[0].step.at == 1.0                 # moved to the start (lead_s)
    assert best.faults[0].step.duration == 0.5           # 2 -> 1 -> 0.5; 0.25 no longer fails
    assert best.workers == 2                             # 8 -> 4 -> 2; one claimer is never tried
    assert all(c.workers >= 2 for c in fake.calls)
    assert best.time_limit_s < 1.0 + 0.5 + 3.0           # the margin after the fault halved at least once
    assert best.time_limit_s >= best.last_end
    lines = changes(recorded(), best)
    assert "removed latency:x at 2 s (2 s)" in lines and len([x for x in lines if x.startswith("removed")]) == 7
    assert "moved pause:x from 37 s to 1 s" in lines and "shortened pause:x from 2 s to 0.5 s" in lines
    assert "workers 8 -> 2" in lines and any(x.startswith("time limit 60 s -> ") for x in lines)


def test_a_clearly_failing_candidate_costs_two_replays_and_a_clearly_passing_one_two():
    fake = Fake(lambda c: has(c, 0))
    s = Search(recorded(n_faults=2), Policy(), fake).run()
    votes = [t for t in s.trials if t.stage not in ("confirm", "recorded")]
    assert votes and all(len(t.replays) == 2 for t in votes)   # 2 failures decide it, or 2 passes
    assert s.best_trial.rate() == "2 of 2"
    assert s.trials[-1].stage == "confirm" and s.result is s.trials[-1]
    assert s.result.rate() == "3 of 3"                  # the result's rate: a full vote, not the lucky streak


def test_finds_a_pair_of_faults_needed_together():
    fake = Fake(lambda c: has(c, 1) and has(c, 6))
    s = Search(recorded(), Policy(), fake).run()
    assert sorted(f.n for f in s.best.faults) == [1, 6]
    stages = [t.stage for t in s.trials]
    assert stages[0] == "faults" and s.trials[0].candidate.faults == ()   # no fault at all first


def test_a_flaky_failure_is_kept_when_two_of_three_replays_fail_and_noise_is_not():
    # the faults that matter fail 2 of 3 replays (fail, pass, fail); any other candidate fails
    # 1 of 3 (pass, fail, pass): noise the vote must not take for the failure
    fake = Fake(lambda c: has(c, 3, min_duration=1.0), fail_pattern=(True, False, True),
                pass_pattern=(False, True, False))
    s = Search(recorded(), Policy(), fake).run()
    assert [f.n for f in s.best.faults] == [3] and s.best.faults[0].step.duration == 1.0
    assert s.best_trial.rate() == "2 of 3"
    assert all(t.failed <= 1 for t in s.trials if not t.failing)
    assert all(len(t.replays) == 3 for t in s.trials)    # neither outcome is clear after two


def test_nothing_reproduces_is_inconclusive_and_writes_nothing():
    fake = Fake(lambda c: False)
    s = Search(recorded(n_faults=3), Policy(), fake).run()
    assert s.exit_code == EXIT_UNKNOWN and s.result is None
    assert s.trials[-1].stage == "recorded" and s.trials[-1].failing is False


def test_only_the_whole_recorded_run_fails_exit_1_with_the_recorded_run_as_result():
    rec = recorded(n_faults=3, workers=2, limit=17.0)
    fake = Fake(lambda c: c.key() == rec.key())
    s = Search(rec, Policy(), fake).run()
    assert s.exit_code == EXIT_NOT_SMALLER
    assert s.result.candidate == rec and s.result.stage == "recorded" and s.result.rate() == "3 of 3"


def test_no_replay_starts_that_the_budget_cannot_finish():
    now = [0.0]

    def replay(cand):
        now[0] += cand.time_limit_s + 4.0                # each replay: its time limit and 4 s of overhead
        return Replayed(failed=has(cand, 2), exit_code=1)
    s = Search(recorded(), Policy(budget_s=250.0), replay, clock=lambda: now[0]).run()
    assert s.ended == "budget"
    # no fault (3 s runs: 14 s), faults 0-3 (28 s runs: 64 s, kept), faults 0-1 (14 s runs: 36 s):
    # 114 s; a run of faults 2-3, counted at 28 + 2 x 4 s, would leave less than the 3 x (28 + 2 x 4)
    # = 108 s kept for confirming the best, so the search stops and confirms faults 0-3 (3 x 32 s)
    assert now[0] == 114.0 + 96.0
    assert [f.n for f in s.result.candidate.faults] == [0, 1, 2, 3]
    assert s.result.stage == "confirm" and s.confirmed and s.exit_code == EXIT_SMALLER
    assert s.exit_code == EXIT_SMALLER



def test_the_replay_estimate_keeps_twice_the_longest_overhead_seen():
    est = ReplayEstimate()
    assert est.likely_s(4.0) == 4.0 and est.safe_s(4.0) == 6.0       # nothing measured: the floor
    est.observe(10.0, 13.0)                                          # a long early replay: 3 s overhead
    est.observe(3.0, 4.5)                                            # a faster one does not lower it
    assert est.overhead_s == 3.0 and est.seen == 2
    assert est.likely_s(4.0) == 7.0 and est.safe_s(4.0) == 10.0
    est.observe(2.0, 7.0)                                            # a loaded one raises it
    assert est.likely_s(4.0) == 9.0 and est.safe_s(4.0) == 14.0


def _search_slowing_down(budget_s: float, switch: int, estimate: ReplayEstimate) -> Search:
    """Replays with 2 s of overhead, then 4 s from replay ``switch`` on (the machine got busy)."""
    now, n = [0.0], [0]

    def replay(cand):
        n[0] += 1
        now[0] += cand.time_limit_s + (2.0 if n[0] < switch else 4.0)
        return Replayed(failed=has(cand, 0, 0.5) and cand.workers >= 2, exit_code=1)
    return Search(recorded(n_faults=2, workers=4, limit=12.0), Policy(budget_s=budget_s), replay,
                  clock=lambda: now[0], estimate=estimate).run()


def test_replays_that_slow_down_midway_still_leave_room_to_confirm_the_result():
    # Whatever the budget and whenever the overhead doubles, a search that found a smaller failing
    # candidate confirms one; counting only the overhead seen so far (margin 1) leaves some
    # results unconfirmed: the room kept went to the slower search replays.
    cases = [(b, k) for b in range(40, 200, 5) for k in range(1, 20)]
    confirmed = 0
    for budget_s, switch in cases:
        s = _search_slowing_down(budget_s, switch, ReplayEstimate())
        assert s.result is None or s.confirmed, (budget_s, switch, s.result.stage)
        confirmed += s.confirmed
    assert confirmed > len(cases) * 3 // 4          # (the smallest budgets fit no candidate at all)
    naive = [_search_slowing_down(b, k, ReplayEstimate(margin=1.0, floor_s=0.0)) for b, k in cases]
    assert any(s.result is not None and not s.confirmed for s in naive)

def test_an_interrupted_replay_ends_the_search_with_the_best_so_far():
    calls = []

    def replay(cand):
        calls.append(cand)
        return Replayed(failed=has(cand, 4), exit_code=1, interrupted=len(calls) == 9)
    s = Search(recorded(), Policy(), replay).run()
    assert s.ended == "interrupted" and len(calls) == 9
    # no fault (2 replays), 0-3 (2), 4-7 (2: kept), 4-5 (2: kept), then 4 alone: interrupted
    assert [f.n for f in s.best.faults] == [4, 5] and s.exit_code == EXIT_SMALLER


def test_every_candidate_time_limit_leaves_the_tail_after_its_last_fault():
    fake = Fake(lambda c: has(c, 2))
    s = Search(recorded(), Policy(tail_s=3.0), fake).run()
    for t in s.trials:
        c = t.candidate
        if t.stage in ("faults", "shorter"):
            assert c.time_limit_s == min(60.0, round(c.last_end + 3.0, 3))
        assert c.time_limit_s >= c.last_end


def test_a_candidate_that_won_its_vote_by_luck_is_refuted_and_the_one_before_it_is_the_result():
    # fault 5 at full strength (1 s or more) always fails; at 0.5 s it fails twice, then never:
    # it wins its vote (2 of 2) and every candidate built on it does, but none survives a full vote
    def needed(c):
        return has(c, 5, min_duration=1.0)

    class Lucky(Fake):
        def __call__(self, cand):
            if not needed(cand) and has(cand, 5, min_duration=0.5):
                it = self._cycles.setdefault(cand.key(), iter([True, True] + [False] * 10))
                return Replayed(failed=next(it), exit_code=1)
            return super().__call__(cand)

    s = Search(recorded(), Policy(), Lucky(needed)).run()
    refuted = [t for t in s.trials if t.stage == "confirm" and not t.failing]
    assert refuted and all(t.rate() == "0 of 3" for t in refuted)
    result = s.result
    assert result.stage == "confirm" and result.rate() == "3 of 3"
    assert [(f.n, f.step.duration) for f in result.candidate.faults] == [(5, 1.0)]
    assert s.exit_code == EXIT_SMALLER


def test_the_progress_line_says_the_counts_the_candidate_and_the_smallest_so_far():
    from leasecheck.harness.search.shrink_progress import line
    now = [0.0]
    seen = []

    def replay(cand):
        now[0] += 5.0
        return Replayed(failed=has(cand, 0), exit_code=1)
    s = Search(recorded(n_faults=2), Policy(budget_s=600.0), replay, clock=lambda: now[0],
               on_replay=lambda search: seen.append(line(search)))
    s.run()
    assert seen[0] == ("shrink: 1 candidate(s), 1 replay(s), 5 s of 600 s; trying (faults) 0 fault(s), "
                       "8 worker(s), 3 s: 0 of 1 failed; smallest failing: none yet")
    assert seen[-1] == ("shrink: 11 candidate(s), 23 replay(s), 115 s of 600 s; trying (confirm) 1 fault(s), "
                        "2 worker(s), 2 s: 3 of 3 failed; smallest failing: 1 fault(s), 2 worker(s), 2 s (2 of 2)")
