"""The store clock's samples: a round trip that spanned a stopped store says little about when the
store read its clock, and is left out when shorter ones exist."""
from leasecheck.checkers.model.clock import StoreClock

MS = 1_000_000
BASE_US = 1_796_137_082_000_000


def _sample(history_ms, store_ms, rtt_ms):
    return {"time": history_ms * MS, "rtt_ns": rtt_ms * MS, "store_us": BASE_US + store_ms * 1000}


def test_a_sample_whose_round_trip_spanned_a_stop_does_not_move_what_the_store_ran_when_continued():
    # Samples every 0.5 s with the store 0 ms ahead; one sent at 3.0 s to a store stopped until
    # 5.04 s: its midpoint is 4.02 s, the store's reading 5.04 s.
    samples = [_sample(t, t, 1) for t in range(0, 3001, 500)] + [_sample(4020, 5040, 2040)] \
        + [_sample(t, t, 1) for t in range(5500, 8001, 500)]
    clock = StoreClock.from_samples(samples)
    assert _near(clock.to_history_ns((BASE_US + 5_078_000) / 1e6), 5078 * MS)
    # Kept, that sample would have placed a command run at 5.078 s a second early.
    assert _near(StoreClock(*_pairs(samples)).to_history_ns((BASE_US + 5_078_000) / 1e6), 4058 * MS)


def test_only_long_round_trips_are_still_used():
    clock = StoreClock.from_samples([_sample(1000, 1300, 600)])
    assert _near(clock.to_history_ns((BASE_US + 2_300_000) / 1e6), 2000 * MS)


def _pairs(samples):
    pairs = [(s["time"], s["store_us"] * 1000) for s in samples]
    return sorted((st, st - h) for h, st in pairs), sorted((h, st - h) for h, st in pairs)


def _near(ns, want):
    return abs(ns - want) < 1000      # a float's seconds since the epoch carry about 0.2 us
