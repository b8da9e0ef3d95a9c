"""Whether a fault took effect, judged from its fault_start.requested and fault_end.measured alone,
and what that does to the verdict."""
import pytest

from leasecheck.checkers import check
from leasecheck.checkers.read.faults import FaultTracker, doubts, judge

MS = 1_000_000


def entry(fault, target, requested, measured):
    return {"n": 0, "fault": fault, "target": target, "requested": requested, "measured": measured}


@pytest.mark.parametrize("requested,measured,expected", [
    ({"duration_s": 4.0}, {"stopped_s": 3.99, "processes": ["w1"]}, True),
    ({"duration_s": 4.0}, {"stopped_s": 3.61, "processes": ["w1"]}, True),     # 10% below: in
    ({"duration_s": 4.0}, {"stopped_s": 3.59, "processes": ["w1"]}, False),    # just out
    ({"duration_s": 1.0}, {"stopped_s": 0.76, "processes": ["store"]}, True),  # 0.25 s floor
    ({"duration_s": 1.0}, {"stopped_s": 0.0, "processes": ["w1"]}, False),     # signal sent, never stopped
    ({"duration_s": 1.0}, {"stopped_s": 0.0, "processes": []}, False),         # nobody to pause
    ({"duration_s": 1.0}, {"paused_s": 1.0, "processes": ["w1"]}, None),       # not watched
])
def test_pause(requested, measured, expected):
    took, why = judge(entry("pause", "holder", requested, measured))
    assert took is expected
    if expected is False and measured["processes"]:
        assert f"requested {requested['duration_s']:.3f} s stopped, measured {measured['stopped_s']:.3f} s" in why


@pytest.mark.parametrize("size,skew,rtt,expected", [
    (4.0, 3.999, 0.001, True),
    (4.0, -0.0001, 0.001, False),      # the relative-path bug: the file was written, the clock never moved
    (4.0, 4.3, 0.0, False),            # 0.05 + 5% = 0.25 s
    (4.0, 4.3, 0.2, True),             # half a slow probe's round trip widens it
    (-2.0, 2.0, 0.0, False),           # the wrong way
    (4.0, None, None, None),           # the store did not answer the probe
])
def test_clock_store(size, skew, rtt, expected):
    took, why = judge(entry("clock", "store", {"size": size, "duration_s": 3.0},
                            {"offsets_s": {"store": size}, "store_skew_s": skew, "store_probe_rtt_s": rtt}))
    assert took is expected
    if expected is False:
        assert f"requested {size:+.3f} s, measured {skew:+.3f} s" in why


def test_clock_store_without_a_size_is_judged_against_the_offset_written():
    took, _ = judge(entry("clock", "store", {"size": None}, {"offsets_s": {"store": 1.5}, "store_skew_s": 1.5}))
    assert took is True


def test_clock_workers_each_against_its_own_offset():
    offsets = {"w0": 1.0, "w1": 3.0, "w2": 2.0}
    ok = {"offsets_s": offsets, "worker_skew_s": {"w0": 1.0, "w1": 3.01, "w2": None},
          "worker_probe_rtt_s": {"w0": 0.001, "w1": 0.001, "w2": None}}
    took, why = judge(entry("clock", "workers", {"size": 3.0}, ok))
    assert took is True and "2 of 3 worker clocks" in why
    bad = dict(ok, worker_skew_s={"w0": 1.0, "w1": 0.0, "w2": 2.0})
    took, why = judge(entry("clock", "workers", {"size": 3.0}, bad))
    assert took is False and "w1 requested +3.000 s, measured +0.000 s" in why
    silent = dict(ok, worker_skew_s={"w0": None, "w1": None, "w2": None})
    assert judge(entry("clock", "workers", {"size": 3.0}, silent))[0] is None
    assert judge(entry("clock", "workers", {"size": 3.0}, {"offsets_s": offsets}))[0] is None


@pytest.mark.parametrize("size,jitter,rtt,expected", [
    (200, 0, 203.0, True), (200, 0, 221.0, False), (200, 20, 221.0, True), (200, 0, 0.3, False),
    (2, 0, 0.3, True),         # below 5 ms the probe cannot tell (documented)
    (200, 0, None, None),
])
def test_latency(size, jitter, rtt, expected):
    took, _ = judge(entry("latency", "workers", {"size": size, "jitter_ms": jitter},
                          {"latency_ms": size, "jitter_ms": jitter, "probe_rtt_ms": rtt}))
    assert took is expected


def test_partition():
    assert judge(entry("partition", "workers", {}, {"probe_answered_during": False}))[0] is True
    took, why = judge(entry("partition", "workers", {}, {"probe_answered_during": True}))
    assert took is False and "answered during the partition" in why
    assert judge(entry("partition", "workers", {}, {}))[0] is None


def test_kill():
    new = {"run_id_before": "a" * 40, "run_id_after": "b" * 40, "keys_after_restart": 0}
    assert judge(entry("kill", "store", {}, new))[0] is True
    assert judge(entry("kill", "store", {}, dict(new, run_id_after="a" * 40))) == \
        (False, "the same store process (run_id aaaaaaaa) answered after the restart")
    assert judge(entry("kill", "store", {}, dict(new, keys_after_restart=3)))[0] is False
    assert judge(entry("kill", "store", {}, {"keys_after_restart": 0}))[0] is None


def test_kill_holder():
    dead = {"processes": ["w3"], "pid": 7, "exit_code": -9, "gone": True, "held": True, "slots": ["w3.s0"],
            "attempts": ["w3.s0.4"], "replacement": "w8"}
    ok, why = judge(entry("kill", "holder", {}, dead))
    assert ok is True and "w3 (pid 7, holding w3.s0) died of SIGKILL and is gone; replacement w8" == why
    assert judge(entry("kill", "holder", {}, dict(dead, gone=False)))[0] is False
    assert judge(entry("kill", "holder", {}, dict(dead, exit_code=0)))[0] is False
    assert judge(entry("kill", "holder", {}, dict(dead, processes=[])))[0] is False


def test_hang_holder():
    hung = {"slot": "w1.s0", "in_job": True, "held_through": True, "calls_during": 4, "alive": True, "held_s": 1.5}
    ok, why = judge(entry("hang", "holder", {}, hung))
    assert ok is True and "w1.s0's job was frozen for 1.5 s" in why and "4 lease call(s)" in why
    for broken in ({"slot": None}, {"in_job": False}, {"held_through": False}, {"alive": False}):
        assert judge(entry("hang", "holder", {}, dict(hung, **broken)))[0] is False, broken


def test_evict():
    assert judge(entry("evict", "store", {}, {"evicted_keys": 200, "evicted_run_keys": 3,
                                              "evicted_run_key_examples": ["lc:job:0"]})) == \
        (True, "the store evicted 200 key(s), 3 of them the run's (e.g. lc:job:0)")
    took, why = judge(entry("evict", "store", {}, {"evicted_keys": 200, "evicted_run_keys": 0}))
    assert took is False and "all of them the fault's own fillers" in why
    assert judge(entry("evict", "store", {}, {"evicted_keys": 0, "evicted_run_keys": 0}))[0] is False
    assert judge(entry("evict", "store", {}, {"evicted_keys": 200}))[0] is None


def test_a_fault_that_failed_to_start_or_never_ended():
    assert judge(entry("kill", "store", {}, {"error": "StoreError: gone"})) == \
        (False, "it failed to start: StoreError: gone")
    took, why = judge(entry("pause", "holder", {"duration_s": 1.0}, None))
    assert took is None and "no fault_end" in why


def _events(measured_skew: float, not_fired: bool = False) -> list[dict]:
    events = [{"time": 0, "type": "run_start", "config": {"key_prefix": "lc:", "ttl_ms": 1000}},
              {"time": 1000 * MS, "process": "nemesis", "type": "fault_start", "fault": "clock",
               "target": "store", "n": 0, "requested": {"duration_s": 1.0, "size": 4.0}},
              {"time": 2000 * MS, "process": "nemesis", "type": "fault_end", "fault": "clock",
               "target": "store", "n": 0,
               "measured": {"offsets_s": {"store": 4.0}, "store_skew_s": measured_skew,
                            "store_probe_rtt_s": 0.001}}]
    if not_fired:
        events.append({"time": 3000 * MS, "process": "nemesis", "type": "fault_not_fired", "fault": "pause",
                       "target": "holder", "n": 1, "at": 10.0,
                       "why": "the run ended (interrupted) at 3.00 s, before its start"})
    return events


def test_the_tracker_lists_judged_faults_and_the_ones_that_never_fired():
    t = FaultTracker()
    for e in _events(-0.0001, not_fired=True):
        t.feed(e)
    (f,) = t.summary()
    assert f["took_effect"] is False and "measured -0.000 s" in f["why"]
    assert t.not_fired() == [{"n": 1, "fault": "pause", "target": "holder", "at": 10.0,
                              "why": "the run ended (interrupted) at 3.00 s, before its start"}]
    reasons = doubts(t.summary(), t.not_fired())
    assert reasons[0].startswith("fault 0 clock:store did not take effect: requested +4.000 s, measured -0.000 s")
    assert reasons[1] == ("fault 1 pause:holder scheduled at 10.00 s did not fire: the run ended "
                          "(interrupted) at 3.00 s, before its start")


def _with_proven_foreign_release(events: list[dict]) -> list[dict]:
    def call(ms, attempt, f):
        return [{"time": ms * MS, "type": "invoke", "f": f, "attempt": attempt, "key": "lc:k"},
                {"time": (ms + 1) * MS, "type": "ok", "f": f, "attempt": attempt, "key": "lc:k", "value": True}]
    more = [*call(10, "w0.s0.0", "acquire"), *call(1200, "w1.s0.0", "acquire"), *call(2600, "w0.s0.0", "release")]
    return sorted(events + more, key=lambda e: e["time"])


def test_a_fault_that_did_not_take_effect_makes_the_verdict_unknown_unless_a_violation_is_proven():
    config = {"key_prefix": "lc:", "max_overlap": None}
    clean = check(_events(4.0), None, config)
    assert not any("fault" in r for r in clean["reasons"]) and clean["faults"][0]["took_effect"] is True
    missed = check(_events(0.0, not_fired=True), None, config)
    assert missed["valid"] == "unknown"
    assert any("did not take effect: requested +4.000 s, measured +0.000 s" in r for r in missed["reasons"])
    assert any("did not fire" in r for r in missed["reasons"])
    assert missed["faults_not_fired"][0]["at"] == 10.0
    # (a pause: a stepped store clock would void the history-only proof itself)
    pause = [{"time": 1000 * MS, "process": "nemesis", "type": "fault_start", "fault": "pause", "target": "holder",
              "n": 0, "requested": {"duration_s": 1.0}},
             {"time": 2000 * MS, "process": "nemesis", "type": "fault_end", "fault": "pause", "target": "holder",
              "n": 0, "measured": {"stopped_s": 0.0, "processes": ["w1"]}}]
    proven = check(_with_proven_foreign_release(_events(0.0)[:1] + pause), None, config)
    assert proven["valid"] is False and proven["foreign_releases"] == 1
    assert any("fault 0 pause:holder did not take effect" in r for r in proven["reasons"])


def test_a_fault_without_a_judge_of_its_own_is_judged_by_what_it_measured_of_itself():
    from leasecheck.checkers.read.faults import judge

    base = {"fault": "oneway", "target": "replies", "requested": {"duration_s": 2}}
    assert judge(base | {"measured": {"took_effect": True, "why": "replies dropped"}}) == (True, "replies dropped")
    assert judge(base | {"measured": {"took_effect": False, "why": "the probe got its reply"}})[0] is False
    assert judge(base | {"measured": {"held_s": 2.0}})[0] is None
