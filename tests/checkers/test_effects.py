from leasecheck.checkers.measures.effects import stale_effects
from leasecheck.checkers.read.ops import Op


def _op(i, value, fence=3):
    return Op(i, f"w0.s0.{i}", "effect", "k", 0, {"type": "ok", "time": 1, "value": value, "fence": fence})


def test_counts_stale_effects_with_and_without_the_fence():
    ops = [_op(0, True), _op(1, False), _op(2, True), _op(3, True)]
    stale = {0: False, 1: True, 2: True, 3: None}
    out = stale_effects(ops, stale)
    assert out == {"effects": 4, "without_fence": 2, "with_fence": 1, "turned_away_by_fence": 1,
                   "undecided": 1, "measured_by": "audit"}


def test_no_fence_no_fenced_count_and_no_sink_no_numbers():
    ops = [_op(0, None, fence=None)]
    assert stale_effects(ops, {0: True})["with_fence"] is None
    assert stale_effects([], {}) is None


def _claim(owner="w0.s0.0", created=100.0, ended=101.0, **kw):
    from leasecheck.checkers.model.claims import Claim
    return Claim(0, 0, "job:0", owner, None, 1, created, None, ended=ended, **kw)


def _clock(slack_ns=0):
    from types import SimpleNamespace
    # store time 100.0 s is history time 0
    return SimpleNamespace(to_history_ns=lambda s: round((s - 100.0) * 1e9), slack_ns=slack_ns)


def _effect(t_ns, attempt="w0.s0.0"):
    return (attempt, t_ns)


def test_history_only_effects_are_judged_against_the_claims_on_the_history_clock():
    claims = [_claim()]
    events = [_effect(500_000_000),      # inside its claim
              _effect(1_500_000_000)]    # after it ended
    out = stale_effects([], {}, events, claims, _clock())
    assert (out["effects"], out["without_fence"], out["undecided"], out["measured_by"]) == (2, 1, 0, "history")
    assert stale_effects([], {}, events)["undecided"] == 2   # no audit: cannot judge


def test_within_the_clocks_slack_of_a_store_time_an_effect_is_undecided_not_stale():
    # the claim ended (expired) at store 101.0 = history 1 s; the clock converts within +-2 ms
    claims = [_claim()]
    events = [_effect(1_001_000_000), _effect(1_003_000_000), _effect(997_000_000)]
    out = stale_effects([], {}, events, claims, _clock(slack_ns=2_000_000))
    assert (out["without_fence"], out["undecided"]) == (1, 1)


def test_the_calls_that_created_and_removed_a_claim_place_it_without_the_clock():
    # A claim of 300 us, from the acquire's completion to the release's invocation: an effect in
    # between was surely covered, whatever the store clock's slack (here 5 ms, ten times the claim).
    claims = [_claim(created=100.0001, ended=100.0004, born_ns=50_000, made_ns=120_000,
                     end_lo_ns=400_000, end_hi_ns=450_000)]
    events = [_effect(200_000), _effect(460_000), _effect(30_000), _effect(420_000)]
    out = stale_effects([], {}, events, claims, _clock(slack_ns=5_000_000))
    # 200 us: covered; 460 us: after the release completed; 30 us: before the acquire was invoked;
    # 420 us: while the release ran (the DEL may or may not have run yet)
    assert (out["without_fence"], out["undecided"]) == (2, 1)


def test_an_attempt_without_a_claim_has_only_stale_effects():
    out = stale_effects([], {}, [_effect(5, attempt="w9.s0.3")], [_claim()], _clock(slack_ns=10**9))
    assert (out["without_fence"], out["undecided"]) == (1, 0)
