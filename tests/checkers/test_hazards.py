"""Hazard coverage on synthetic histories: each rule of docs/history.md (Hazard coverage) counted
where it holds and not where it does not; which hazards are relevant to what the lease does; the
verdict line's "— but ..." when a relevant one was never reached."""
from leasecheck.checkers.measures.hazards import EDGE_NS, NAMES, Hazards, missed_sentence, verdict_suffix

MS = 1_000_000
TTL_MS = 1000


def _run(events):
    h = Hazards()
    h.feed({"time": 0, "process": "harness", "type": "run_start", "config": {"ttl_ms": TTL_MS}})
    for e in events:
        h.feed(e)
    return h


def call(t_ms, kind, f, attempt, value=None, key="job:0"):
    e = {"time": round(t_ms * MS), "process": attempt.rsplit(".", 1)[0], "type": kind, "f": f,
         "attempt": attempt, "key": key}
    if kind == "ok":
        e["value"] = value
    return e


def job_end(t_ms, attempt):
    return {"time": round(t_ms * MS), "process": attempt.rsplit(".", 1)[0], "type": "job_end", "attempt": attempt,
            "key": "job:0"}


def won(t_ms, attempt, key="job:0"):
    return [call(t_ms, "invoke", "acquire", attempt, key=key), call(t_ms + 1, "ok", "acquire", attempt, True, key)]


def test_a_holder_past_its_deadline_and_a_release_spanning_it():
    # A wins at 0 ms (deadline 1000 ms), its job ends at 1600 ms: past the deadline; its release
    # is invoked at 990 ms and completes at 1010 ms (paused mid-release): in flight at the expiry.
    h = _run(won(0, "w0.s0.1") + [job_end(1600, "w0.s0.1")])
    assert h.counts["holder_past_deadline"] == 1
    h = _run(won(0, "w0.s0.1") + [job_end(980, "w0.s0.1"), call(990, "invoke", "release", "w0.s0.1"),
                                  call(1010, "ok", "release", "w0.s0.1", True)])
    assert h.counts["release_at_expiry"] == 1 and h.counts["holder_past_deadline"] == 0
    assert h.first["release_at_expiry"] == {"who": "w0.s0.1", "time_s": 1.01}


def test_a_release_before_or_after_its_deadline_is_no_hazard():
    # Released at 400 ms (inside the lease), or at 1600 ms (the claim long gone: the release found
    # nothing, which `releases_found_nothing` counts; the expiry was not raced).
    for at in (400, 1600):
        h = _run(won(0, "w0.s0.1") + [call(at, "invoke", "release", "w0.s0.1"),
                                      call(at + 1, "ok", "release", "w0.s0.1", at < 1000)])
        assert h.counts["release_at_expiry"] == 0, at
        assert h.calls["release"] == 1


def test_a_renewal_racing_the_expiry_and_one_well_before_it():
    h = _run(won(0, "w0.s0.1") + [call(999.5, "invoke", "renew", "w0.s0.1"),
                                  call(999.8, "ok", "renew", "w0.s0.1", True)])
    assert h.counts["renew_at_expiry"] == 1     # within a millisecond of the deadline
    h = _run(won(0, "w0.s0.1") + [call(333, "invoke", "renew", "w0.s0.1"), call(334, "ok", "renew", "w0.s0.1", True),
                                  # the renewal moved the deadline to 1333 ms: a renewal at 1000 ms races nothing
                                  call(1000, "invoke", "renew", "w0.s0.1"), call(1001, "ok", "renew", "w0.s0.1", True)])
    assert h.counts["renew_at_expiry"] == 0


def test_an_acquire_within_a_millisecond_of_another_claims_expiry():
    near = won(0, "w0.s0.1") + [call(1000 + EDGE_NS / MS / 2, "invoke", "acquire", "w1.s0.1"),
                                call(1000.9, "fail", "acquire", "w1.s0.1")]
    assert _run(near).counts["acquire_at_expiry"] == 1
    far = won(0, "w0.s0.1") + [call(997, "invoke", "acquire", "w1.s0.1"), call(998, "fail", "acquire", "w1.s0.1")]
    assert _run(far).counts["acquire_at_expiry"] == 0
    other_key = won(0, "w0.s0.1") + [call(1000, "invoke", "acquire", "w1.s0.1", key="job:1"),
                                     call(1000.5, "fail", "acquire", "w1.s0.1", key="job:1")]
    assert _run(other_key).counts["acquire_at_expiry"] == 0
    released = won(0, "w0.s0.1") + [call(500, "invoke", "release", "w0.s0.1"), call(501, "ok", "release", "w0.s0.1", True),
                                    call(1000, "invoke", "acquire", "w1.s0.1"), call(1000.5, "ok", "acquire", "w1.s0.1", True)]
    assert _run(released).counts["acquire_at_expiry"] == 0


def test_a_clock_jump_and_a_crash_while_a_claim_is_held():
    clock = {"time": 500 * MS, "process": "nemesis", "type": "fault_start", "fault": "clock", "target": "store", "n": 0}
    crash = {"time": 600 * MS, "process": "w0.s0", "type": "slot_crash", "error": "boom"}
    h = _run(won(0, "w0.s0.1") + [clock, crash])
    assert h.counts["clock_jump_while_held"] == 1 and h.counts["holder_killed"] == 1
    idle = _run([clock | {"time": 100 * MS}, crash | {"process": "w1.s0"}])
    assert idle.counts["clock_jump_while_held"] == 0 and idle.counts["holder_killed"] == 0


def test_relevant_hazards_follow_what_the_lease_does_and_the_verdict_says_what_was_missed():
    h = _run(won(0, "w0.s0.1") + [job_end(400, "w0.s0.1"), call(401, "invoke", "release", "w0.s0.1"),
                                  call(402, "ok", "release", "w0.s0.1", True)])
    d = h.to_dict()
    assert set(d["counts"]) == set(NAMES) and d["reached"] == 0
    assert d["relevant"] == ["holder_past_deadline", "release_at_expiry"]      # it releases, never renews
    assert d["missed"] == ["holder_past_deadline", "release_at_expiry"]
    assert verdict_suffix(d) == (" — but no holder outlived its deadline: a release by key name was not exercised; "
                                 "no release was in flight at an expiry: a check-then-act release was not exercised")
    assert missed_sentence("renew_at_expiry").startswith("no renewal raced its claim's expiry")
    assert verdict_suffix({"missed": []}) == "" and verdict_suffix(None) == ""
    assert h.to_dict(failover_unreplicated=2)["counts"]["failover_unreplicated"] == 2


def test_a_call_hung_event_is_no_completion():
    hung = {"time": 700 * MS, "process": "w0.s0", "type": "call_hung", "f": "release", "attempt": "w0.s0.1",
            "key": "job:0", "invoked": 990 * MS, "running_s": 1, "bound_s": 1, "stack": ""}
    h = _run(won(0, "w0.s0.1") + [call(990, "invoke", "release", "w0.s0.1"), hung,
                                  call(1010, "ok", "release", "w0.s0.1", True)])
    assert h.counts["release_at_expiry"] == 1
