from checkers.effects import stale_effects
from checkers.ops import Op


def _op(i, value, fence=3):
    return Op(i, f"w0.s0.{i}", "effect", "k", 0, {"type": "ok", "time": 1, "value": value, "fence": fence})


def test_counts_stale_effects_with_and_without_the_fence():
    ops = [_op(0, True), _op(1, False), _op(2, True), _op(3, True)]
    stale = {0: False, 1: True, 2: True, 3: None}
    out = stale_effects(ops, stale)
    assert out == {"effects": 4, "without_fence": 2, "with_fence": 1, "turned_away_by_fence": 1,
                   "undecided": 1}


def test_no_fence_no_fenced_count_and_no_sink_no_numbers():
    ops = [_op(0, None, fence=None)]
    assert stale_effects(ops, {0: True})["with_fence"] is None
    assert stale_effects([], {}) is None
