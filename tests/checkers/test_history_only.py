from leasecheck.checkers.measures.history_only import proven_foreign_releases
from leasecheck.checkers.read.ops import Op

MS = 1_000_000


def _op(i, attempt, f, invoke_ms, end_ms, value):
    return Op(i, attempt, f, "k", invoke_ms * MS, {"type": "ok", "time": end_ms * MS, "value": value})


def test_a_release_that_deleted_something_long_after_its_claim_expired_is_proven_foreign():
    ops = [_op(0, "a", "acquire", 0, 1, True),
           _op(1, "a", "release", 2500, 2501, True),     # 2.5 s after a 1 s claim: not its own
           _op(2, "b", "acquire", 100, 101, True),
           _op(3, "b", "release", 900, 901, True),       # inside its lease: could be its own
           _op(4, "c", "acquire", 0, 1, True),
           _op(5, "c", "release", 3000, 3001, False)]    # found nothing: no harm done
    proven = proven_foreign_releases(ops, 1000, [])
    assert [op.attempt for op in proven] == ["a"]


def test_the_completion_of_the_acquire_bounds_the_deadline_not_its_invocation():
    ops = [_op(0, "a", "acquire", 0, 400, True),          # the SET may have run at 399 ms
           _op(1, "a", "release", 1200, 1201, True)]      # 1.2 s after invoke, 0.8 s after completion
    assert proven_foreign_releases(ops, 1000, []) == []


def test_a_stepped_store_clock_voids_the_proof():
    ops = [_op(0, "a", "acquire", 0, 1, True), _op(1, "a", "release", 5000, 5001, True)]
    events = [{"type": "fault_start", "fault": "clock", "target": "store"}]
    assert proven_foreign_releases(ops, 1000, events) is None
    assert proven_foreign_releases(ops, None, []) is None


def test_check_without_an_audit_reports_the_proven_foreign_release():
    from leasecheck.checkers import check

    def call(ms, attempt, f, value):
        return [{"time": ms * MS, "type": "invoke", "f": f, "attempt": attempt, "key": "lc:k"},
                {"time": (ms + 1) * MS, "type": "ok", "f": f, "attempt": attempt, "key": "lc:k", "value": value}]
    events = [{"time": 0, "type": "run_start", "config": {"key_prefix": "lc:", "ttl_ms": 1000}},
              *call(10, "w0.s0.0", "acquire", True), *call(1200, "w1.s0.0", "acquire", True),
              *call(2600, "w0.s0.0", "release", True)]     # 2.6 s after a 1 s claim: not its own
    result = check(events, None, {"key_prefix": "lc:", "max_overlap": None})
    assert result["valid"] is False and result["foreign_releases"] == 1
    assert result["certainty"]["foreign_releases"] == "proven from the history"
    events[-2:] = call(600, "w0.s0.0", "release", True)       # inside its lease: cannot tell
    assert check(sorted(events, key=lambda e: e["time"]), None, {"key_prefix": "lc:"})["valid"] == "unknown"
