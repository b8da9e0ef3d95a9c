"""The calls in flight, as the pairer and the hazards keep them: the latest invocation of a str
attempt is kept aside from their dicts until another is invoked (the commonest call never goes into
a dict and out again). Whatever the order of the events, the calls open and the problems are those
of one dict `attempt -> call`: re-invoked, mismatched and never-completed calls, and attempts that
are no str, which use the dict."""
from leasecheck.checkers.measures.hazards import Hazards
from leasecheck.checkers.read.ops import Pairer


def ev(t, kind, f, attempt, value=None):
    e = {"time": t, "index": t, "type": kind, "f": f, "attempt": attempt, "key": "k", "process": "w1.s0"}
    if kind != "invoke":
        e["sent"] = [["w1.s0.c0", t, "SET"]]
        if kind == "ok":
            e["value"] = value
    return e


def pair(events):
    p, done = Pairer(), []
    for e in events:
        op = p.feed(e)
        if op is not None:
            done.append((op.attempt, op.f, op.invoke_time, op.end_time))
    return p, done


def test_adjacent_calls_pair_and_leave_nothing_open():
    p, done = pair([ev(1, "invoke", "acquire", "a1"), ev(2, "fail", "acquire", "a1"),
                    ev(3, "invoke", "acquire", "a2"), ev(4, "ok", "acquire", "a2", True)])
    assert done == [("a1", "acquire", 1, 2), ("a2", "acquire", 3, 4)]
    assert p.problems == [] and p.never_completed() == []


def test_interleaved_re_invoked_and_mismatched_calls_are_those_of_one_dict():
    p, done = pair([
        ev(1, "invoke", "acquire", "a1"),
        ev(2, "invoke", "acquire", "a2"),     # a1 goes into the dict, a2 is aside
        ev(3, "ok", "release", "a2", True),   # no matching invoke: a2's acquire stays open
        ev(4, "invoke", "renew", "a2"),       # a2 re-invoked while its acquire is open: abandoned
        ev(5, "fail", "acquire", "a1"),       # completes a1 (from the dict)
        ev(6, "invoke", "acquire", 7),        # an attempt that is no str: the dict
        ev(7, "invoke", "release", "a3"),
    ])
    assert done == [("a1", "acquire", 1, 5)]
    assert p.problems == ["history #3: ok of release by a2 has no matching invoke (ignored)",
                          "history #4: a2 invoked renew while its acquire was still open"]
    assert [(op.attempt, op.f) for op in p.never_completed()] == [("a2", "acquire"), ("a2", "renew"), (7, "acquire"),
                                                                   ("a3", "release")]
    p2, done2 = pair([ev(8, "fail", "acquire", 7), ev(9, "ok", "release", "a3", True), ev(10, "ok", "renew", "a2", True)])
    assert p2.problems and not done2      # (a fresh pairer: none of them was invoked there)


def test_a_completion_finds_its_call_wherever_it_is_kept():
    p, done = pair([ev(1, "invoke", "acquire", "a1"), ev(2, "invoke", "acquire", "a2"),
                    ev(3, "fail", "acquire", "a2"), ev(4, "fail", "acquire", "a1"),
                    ev(5, "invoke", "acquire", 1), ev(6, "fail", "acquire", 1)])
    assert done == [("a2", "acquire", 2, 3), ("a1", "acquire", 1, 4), (1, "acquire", 5, 6)]
    assert p.problems == [] and p.never_completed() == []


def test_the_hazards_take_an_invocation_from_where_it_was_kept():
    """A release that spans its attempt's deadline is counted with its own invocation time, also
    when another attempt's call was invoked in between (so its own went into the dict)."""
    ms = 1_000_000
    h = Hazards()
    h.feed({"time": 0, "type": "run_start", "config": {"ttl_ms": 10}})
    for e in [ev(0, "invoke", "acquire", "a1"), ev(1 * ms, "ok", "acquire", "a1", True),
              ev(5 * ms, "invoke", "release", "a1"), ev(6 * ms, "invoke", "acquire", "a2"),
              ev(15 * ms, "ok", "release", "a1", True), ev(16 * ms, "fail", "acquire", "a2")]:
        h.feed(e)
    assert h.counts["release_at_expiry"] == 1
    assert h.calls == {"acquire": 2, "release": 1, "renew": 0}
