"""The terminal summary's liveness rows: durations read in the unit that shows them."""
from leasecheck.harness.reports.liveness import _hold


def test_a_hold_under_a_second_reads_in_milliseconds_not_as_zero_seconds():
    holds = {"count": 191905, "median_s": 0.000458, "longest_s": 0.103, "max_hold_s": None,
             "over_max_hold": 0, "longest": {"attempt": "w4.s0.211", "key": "k"}}
    text = _hold(holds)
    assert text.startswith("103 ms (w4.s0.211 on k)") and "median 0.458 ms over 191905 claim(s)" in text
    holds |= {"longest_s": 2.306, "median_s": 1.5}
    assert _hold(holds).startswith("2.306 s (") and "median 1.5 s" in _hold(holds)
