"""What the lease raised is counted by type with the first example (docs/history.md,
"Exceptions"); a lease that raised on every attempt makes the verdict unknown, naming it."""
from pathlib import Path

from leasecheck.checkers import check, check_run
from leasecheck.checkers.measures.exceptions import Exceptions, split_error

DATA = Path(__file__).parent / "data"
CONFIG = {"key_prefix": "leasecheck:t1:", "ttl_ms": 1000, "time_limit_s": 3, "workers": 1, "slots": 1}


def ev(t_ms: float, kind: str, **fields) -> dict:
    return {"time": int(t_ms * 1e6), "process": "w0.s0", "type": kind, **fields}


def constructor_raised(n: int) -> list[dict]:
    return [ev(10 + i, "lease_error", attempt=f"w0.s0.{i}", key="leasecheck:t1:job:0", error="RuntimeError: boom", sent=[])
            for i in range(n)]


def call(i: int, t_ms: float, kind: str, f: str = "acquire", **fields) -> list[dict]:
    a = f"w0.s0.{i}"
    return [ev(t_ms, "invoke", f=f, attempt=a, key="leasecheck:t1:job:0"), ev(t_ms + 1, kind, f=f, attempt=a, key="leasecheck:t1:job:0", sent=[], **fields)]


def counted(events) -> Exceptions:
    seen = Exceptions()
    for e in events:
        seen.feed(e)
    return seen


def test_each_lease_error_and_each_info_with_an_error_is_one_exception_of_its_type():
    events = (constructor_raised(3) + call(3, 20, "info", error="ConnectionError: reset")
              + call(4, 30, "info", f="release", error="TimeoutError: Timeout reading")
              + call(5, 40, "info", error="ConnectionError: refused") + call(6, 50, "ok", value=True)
              + call(7, 60, "fail", value=False) + call(8, 70, "info"))   # info without an error: not one
    d = counted(events).to_dict()
    assert d["count"] == 6
    assert d["by_type"] == {"RuntimeError": 3, "ConnectionError": 2, "TimeoutError": 1}
    assert list(d["by_type"]) == ["RuntimeError", "ConnectionError", "TimeoutError"]   # most first
    assert d["first"] == {"type": "RuntimeError", "message": "boom", "in": "constructor", "attempt": "w0.s0.0",
                          "process": "w0.s0", "time_s": 0.01}


def test_the_first_is_the_earliest_in_history_order_and_names_the_call():
    d = counted(call(0, 5, "ok", value=True) + call(1, 9, "info", f="renew", error="ValueError: bad ttl")).to_dict()
    assert d["first"]["in"] == "renew" and d["first"]["type"] == "ValueError" and d["first"]["message"] == "bad ttl"


def test_an_error_without_a_type_counts_as_exception():
    assert split_error("RuntimeError: boom") == ("RuntimeError", "boom")
    assert split_error("KeyError") == ("KeyError", "")
    assert split_error("something odd happened") == ("Exception", "something odd happened")
    assert split_error("redis.exceptions.ResponseError: ERR x: y") == ("redis.exceptions.ResponseError", "ERR x: y")


def test_every_attempt_raised_only_when_no_call_returned():
    assert counted(constructor_raised(4)).every_attempt_raised
    assert counted(call(0, 1, "info", error="E: a") + call(1, 5, "info", f="release", error="E: b")).every_attempt_raised
    assert not counted(constructor_raised(2) + call(2, 30, "ok", value=True)).every_attempt_raised
    assert not counted(call(0, 1, "ok", value=True)).every_attempt_raised
    assert not counted([]).every_attempt_raised


def history(*events) -> list[dict]:
    start = {"time": 0, "process": "harness", "type": "run_start", "schema_version": 1, "config": CONFIG}
    end = {"time": int(3.1e9), "process": "harness", "type": "run_end", "reason": "time-limit"}
    return [start, *events, end]


def test_a_constructor_that_always_raises_is_inconclusive_naming_the_exception_and_the_attempt():
    r = check(history(*constructor_raised(5)), None, CONFIG)
    assert r["valid"] == "unknown"
    assert r["exceptions"]["count"] == 5 and r["exceptions"]["by_type"] == {"RuntimeError": 5}
    [reason] = [x for x in r["reasons"] if "the lease raised on every attempt" in x]
    assert "RuntimeError: boom" in reason and "w0.s0.0" in reason and "constructor" in reason


def test_a_lease_that_raised_now_and_then_is_counted_not_doubted():
    r = check(history(*call(0, 5, "ok", value=True), *call(1, 20, "info", error="ConnectionError: reset")),
              None, CONFIG)
    assert r["exceptions"]["count"] == 1
    assert not any("raised on every attempt" in x for x in r["reasons"])


def test_every_saved_run_has_the_field():
    r = check_run(DATA / "incident-token-cas-ok")
    assert r["valid"] is True and r["exceptions"] == {"count": 0, "by_type": {}, "first": None}


def test_calls_that_only_lost_the_store_are_no_sign_of_a_broken_lease():
    timeouts = call(0, 10, "info", error="timeout") + call(1, 20, "info", error="ConnectionError: reset")
    assert not counted(timeouts).every_attempt_raised          # judged from the audit instead
    broken = timeouts + call(2, 30, "info", error="RuntimeError: boom")
    assert counted(broken).every_attempt_raised                # the lease's own code raised too
    assert not counted(broken + call(3, 40, "ok", value=True)).every_attempt_raised
