from leasecheck.checkers.read.faults import faults


def test_pairs_starts_and_ends_and_keeps_an_unfinished_fault():
    events = [
        {"time": 1_000_000_000, "type": "fault_start", "fault": "pause", "target": "holder", "n": 0,
         "requested": {"duration_s": 2.0}},
        {"time": 3_000_000_000, "type": "fault_end", "fault": "pause", "target": "holder", "n": 0,
         "measured": {"paused_s": 2.001}},
        {"time": 5_000_000_000, "type": "fault_start", "fault": "clock", "target": "store", "n": 1,
         "requested": {"size": 4.0}},
    ]
    out = faults(events)
    assert out[0]["requested"] == {"duration_s": 2.0} and out[0]["measured"] == {"paused_s": 2.001}
    assert (out[0]["start_s"], out[0]["end_s"]) == (1.0, 3.0)
    assert out[1]["fault"] == "clock" and out[1]["end_s"] is None and out[1]["measured"] is None
