"""Hung calls (liveness): a lease whose acquire wins and then blocks forever must not pass as
VALID, nor keep the run from ending: the worker reports the call with its stack once it has run
past ``--call-timeout``, leaves that slot behind at the time limit, and the run fails naming it."""
import json
import time

import pytest

pytestmark = pytest.mark.integration

LEASE = "tests/integration/hung_lease.py:HangsAfterWinning"


def test_an_acquire_that_never_returns_fails_the_run_with_its_stack(leasecheck):
    started = time.monotonic()
    r = leasecheck("run", "--lease", LEASE, "--time-limit", "4", "--call-timeout", "2s", "--workers", "2",
                   timeout=120)
    took = time.monotonic() - started
    assert r.code == 1, r.out + r.err
    res = r.results
    hung = res["hung_calls"]
    assert res["valid"] is False and hung["count"] >= 2        # each worker's slot hangs in its first acquire
    first = hung["first"][0]
    assert first["f"] == "acquire" and first["attempt"].endswith(".s0.0")
    assert first["running_s"] >= 2 and first["bound_s"] == 2 and first["returned_after_s"] is None
    assert "hung_lease.py" in first["stack"] and "time.sleep(3600)" in first["stack"]
    assert "claim_loop.py" not in first["stack"] and "worker.py" not in first["stack"]   # the call's own frames only
    assert "threading.py" not in first["stack"]     # (compiled, the claim loop has no frames: it stops at _run_slot)
    reason = res["reasons"][0]
    assert f"attempt {first['attempt']}'s acquire" in reason and "had not returned after" in reason
    assert "time.sleep(3600)" in reason
    assert res["liveness"]["valid"] is False and res["safety"]["valid"] is not False   # a liveness failure
    assert "hung calls" in r.out and "INVALID" in r.out and "liveness INVALID" in r.out
    html = (r.run_dir / "report.html").read_text()
    assert "Hung calls" in html and "time.sleep(3600)" in html        # with its stack
    assert took < 4 + 2 + 15, f"the run took {took:.1f} s"


def test_the_default_scenario_has_no_hung_call(leasecheck):
    r = leasecheck("run", "--time-limit", "5", timeout=120)
    assert r.code == 0, r.out + r.err
    assert r.results["hung_calls"] == {"count": 0, "first": []}
    assert "hung calls" in r.out


def test_an_asynchronous_call_that_never_returns_is_reported_with_its_tasks_stack(leasecheck):
    """Slot 0's task hangs in its first acquire; slot 1, a task on the same loop, goes on claiming
    (the loop is not blocked); the worker leaves slot 0 behind at the time limit."""
    started = time.monotonic()
    r = leasecheck("run", "--lease", "tests/integration/async_hung_lease.py:HangsInAnAwait", "--time-limit", "4",
                   "--call-timeout", "2s", "--workers", "1", "--slots", "2", timeout=120)
    took = time.monotonic() - started
    assert r.code == 1, r.out + r.err
    hung = r.results["hung_calls"]
    assert hung["count"] == 1
    first = hung["first"][0]
    assert first["attempt"] == "w0.s0.0" and first["f"] == "acquire" and first["process"] == "w0.s0"
    assert "async_hung_lease.py" in first["stack"] and "await asyncio.Event().wait()" in first["stack"]
    assert "async_claim_loop.py" not in first["stack"]
    events = [json.loads(line) for line in (r.run_dir / "history.jsonl").read_text().splitlines()]
    assert [e["reason"] for e in events if e["type"] == "worker_end"] == ["left hung: w0.s0"]
    # the other task on the loop kept claiming and releasing while slot 0 hung
    assert sum(e["type"] == "ok" and e["f"] == "release" and e["process"] == "w0.s1" for e in events) >= 3
    assert took < 4 + 2 + 15, f"the run took {took:.1f} s"
