"""Hung calls (liveness), judged on synthetic histories without an audit: a call a worker reported
still running past the call bound (`call_hung`) fails the run, naming the attempt, the call, how
long it had run and the innermost lines of its stack; a slow call that returned within the bound
is fine, and one that returned only after its report still counts."""
from leasecheck.checkers import check
from leasecheck.checkers.measures.hung_calls import innermost
from leasecheck.events import CALL_HUNG
from leasecheck.harness.settings.config import RunConfig

CONFIG = {"key_prefix": "lc:t:", "ttl_ms": 1000, "time_limit_s": 4}
KEY = "lc:t:job:0"
STACK = ('  File "/tmp/tests/hung_lease.py", line 14, in acquire\n'
         '    self._wait()\n'
         '  File "/tmp/tests/hung_lease.py", line 17, in _wait\n'
         '    time.sleep(3600)\n')


def ev(t_s: float, process: str, kind: str, **fields) -> dict:
    return {"time": int(t_s * 1e9), "process": process, "type": kind, **fields}


def history(*calls) -> list[dict]:
    """A run of one worker whose slot makes `calls`, framed by the run's and the worker's ends."""
    return [ev(0, "harness", "run_start", config=CONFIG), ev(0.01, "w0", "worker_start", pid=7),
            *calls, ev(4.2, "w0", "worker_end", pid=7),
            ev(4.3, "harness", "run_end", reason="time-limit", stopped_at=int(4.0e9))]


def hung(t_s: float, attempt: str = "w0.s0.0", f: str = "acquire", invoked_s: float = 0.1, **more) -> dict:
    return ev(t_s, "w0.s0", CALL_HUNG, f=f, attempt=attempt, key=KEY, invoked=int(invoked_s * 1e9),
              running_s=round(t_s - invoked_s, 3), bound_s=2.0, stack=STACK, **more)


def call(t0: float, t1: float, attempt: str, f: str, value: bool = True) -> list[dict]:
    done = "ok" if value or f != "acquire" else "fail"
    return [ev(t0, "w0.s0", "invoke", f=f, attempt=attempt, key=KEY),
            ev(t1, "w0.s0", done, f=f, attempt=attempt, key=KEY, value=value, sent=[])]


def test_a_hung_acquire_fails_the_run_naming_the_attempt_the_call_and_its_stack():
    res = check(history(ev(0.1, "w0.s0", "invoke", f="acquire", attempt="w0.s0.0", key=KEY), hung(2.1)),
                None, CONFIG)
    assert res["valid"] is False
    assert res["hung_calls"]["count"] == 1
    (first,) = res["hung_calls"]["first"]
    assert first["attempt"] == "w0.s0.0" and first["f"] == "acquire" and first["running_s"] == 2.0
    assert first["invoked_s"] == 0.1 and first["returned_after_s"] is None and first["stack"] == STACK
    (reason,) = [r for r in res["reasons"] if "had not returned" in r]
    assert reason.startswith("attempt w0.s0.0's acquire on lc:t:job:0 had not returned after 2 s (bound 2 s): ")
    assert "hung_lease.py:17 in _wait: time.sleep(3600) <- hung_lease.py:14 in acquire: self._wait()" in reason
    assert res["reasons"][0] == reason       # the only failure of a run that claimed nothing


def test_a_slow_call_that_returned_within_the_bound_is_fine():
    res = check(history(*call(0.1, 1.9, "w0.s0.0", "acquire"), ev(1.9, "w0.s0", "job_start", attempt="w0.s0.0", key=KEY),
                        ev(2.3, "w0.s0", "job_end", attempt="w0.s0.0", key=KEY),
                        *call(2.3, 2.4, "w0.s0.0", "release")),
                None, CONFIG)
    assert res["hung_calls"] == {"count": 0, "first": []}
    assert not any("had not returned" in r for r in res["reasons"])
    assert res["valid"] != False  # noqa: E712 — no audit: "unknown" at best, but never failed for this


def test_a_call_that_returned_after_its_report_still_counts_and_says_when():
    res = check(history(*call(0.1, 3.0, "w0.s0.0", "acquire", value=False)[:1], hung(2.1),
                        call(0.1, 3.0, "w0.s0.0", "acquire", value=False)[1],
                        ev(3.5, "w0.s1", "invoke", f="renew", attempt="w0.s1.4", key=KEY),
                        hung(3.6, attempt="w0.s1.4", f="renew", invoked_s=1.5)),
                None, CONFIG)
    assert res["valid"] is False and res["hung_calls"]["count"] == 2
    first, second = res["hung_calls"]["first"]
    assert first["returned_after_s"] == 2.9 and second["f"] == "renew" and second["returned_after_s"] is None
    (reason,) = [r for r in res["reasons"] if "had not returned" in r]
    assert "and returned only after 2.9 s" in reason and "1 more hung call(s)" in reason


def test_innermost_quotes_the_last_frames_innermost_first():
    assert innermost(STACK, 1) == "hung_lease.py:17 in _wait: time.sleep(3600)"
    assert innermost("") == ""


def test_the_default_call_bound_covers_every_client_retry_or_three_ttls():
    assert RunConfig().call_bound_s == 5.0 * 11 + 10 * 1.0 + 5.0                    # redis-py's 5 s, 10 retries
    assert RunConfig(client_timeout_s=0.2, client_retries=0, ttl_s=1.0).call_bound_s == 3.0 + 5.0
    assert RunConfig(client_timeout_s=0.2, client_retries=0, ttl_s=10.0).call_bound_s == 35.0
    assert RunConfig(topology="redlock", nodes=5, client_timeout_s=1.0, client_retries=1).call_bound_s == 5 * 3.0 + 5.0
    assert RunConfig(call_timeout_s=2.0).call_bound_s == 2.0
