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


def test_history_only_effects_are_judged_against_the_claims_on_the_store_clock():
    from types import SimpleNamespace

    claims = [SimpleNamespace(owner="w0.s0.0", created=100.0, ended=101.0)]
    clock = SimpleNamespace(to_store_s=lambda ns: 100.0 + ns / 1e9)
    events = [{"type": "effect", "attempt": "w0.s0.0", "time": 500_000_000},    # inside its claim
              {"type": "effect", "attempt": "w0.s0.0", "time": 1_500_000_000}]  # after it ended
    out = stale_effects([], {}, events, claims, clock)
    assert (out["effects"], out["without_fence"], out["measured_by"]) == (2, 1, "history")
    assert stale_effects([], {}, events)["undecided"] == 2   # no audit: cannot judge
