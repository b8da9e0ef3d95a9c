"""A run of several nodes is measured in one pass: each node's view of the history is handed to
its thread as the history goes (`nodes.NodeFeed`), with bounded memory — `NodeView` holds back
only `LATE_WINDOW_NS` of events (to join a late command to its call), never the history — and
the same counts as the whole-history view."""
import pytest

from leasecheck.checkers import check
from leasecheck.checkers.model import nodes as nodes_mod
from leasecheck.checkers.model.nodes import LATE_WINDOW_NS, NodeFeed, NodeView, only_node
from tests.checkers.test_mutual_exclusion import CONFIG, KEY, MS, _history, _late, _nodes


def _long_history(n: int) -> list[dict]:
    """`n` acquires of one attempt each, 1 ms apart, each sending a SET to node1 and node2."""
    out = []
    for i in range(n):
        a = f"w0.s0.{i}"
        base = {"process": "w0.s0", "f": "acquire", "attempt": a, "key": KEY}
        out.append(dict(base, time=2 * i * MS, type="invoke"))
        out.append(dict(base, time=(2 * i + 1) * MS, type="fail", value=False,
                        sent=[["w0.s0.c0@node1", i, "SET"], ["w0.s0.c1@node2", i, "SET"]]))
    return out


def test_a_nodes_view_holds_back_a_bounded_window_of_events_not_the_history():
    view = NodeView("node2")
    most, out = 0, []
    events = _long_history(5_000)                     # 10 s of history: five windows
    for e in events:
        out += view.feed(e)
        most = max(most, len(view.held))
    out += view.close()
    window_events = LATE_WINDOW_NS // MS + 1          # one event per ms
    assert most <= window_events + 1 < len(events) // 4
    assert len(view.done) <= window_events and not view.invoked
    assert out == only_node(events, "node2")          # the same view, held whole or not
    assert all(e["sent"] == [["w0.s0.c1@node2", int(e["attempt"].rsplit(".", 1)[1]), "SET"]]
               for e in out if e["type"] == "info")


@pytest.mark.parametrize("where", ["before", "after"])
def test_a_late_command_within_the_window_joins_its_calls_completion(where):
    node2 = only_node(_late(_history(b_wins=False), where), "node2")
    view = NodeView("node2")
    streamed = [x for e in _late(_history(b_wins=False), where) for x in view.feed(e)] + view.close()
    assert streamed == node2 and not [e for e in streamed if e["type"] == "late_sent"]


def test_a_late_command_past_the_window_reaches_the_node_as_its_own_late_sent_and_is_still_joined(monkeypatch):
    ev = _late(_history(b_wins=False), "after")
    late = next(e for e in ev if e["type"] == "late_sent")
    view = NodeView("node2", window_ns=late["time"] - next(
        e["time"] for e in ev if e.get("attempt") == late["attempt"] and e["type"] == "ok") - 1)
    streamed = [x for e in ev for x in view.feed(e)] + view.close()
    (passed,) = [e for e in streamed if e["type"] == "late_sent"]
    assert passed["sent"] == [["a.s0.c1@node2", 0, "SET"]]
    # the check credits it to A's attempt as on one store: the same verdict and claims per node
    monkeypatch.setattr(nodes_mod, "LATE_WINDOW_NS", 1)
    r = check(ev, None, CONFIG, nodes=_nodes(jump_s=0.0))
    assert r["valid"] is True and r["disagreements"] == [] and r["problems"] == []
    assert r["mutual_exclusion"]["claims_per_node"] == {"node1": 1, "node2": 1, "node3": 1}


def test_a_node_that_fails_to_measure_fails_the_check_not_hangs_it(monkeypatch):
    def broken(*args, **kwargs):
        raise RuntimeError("node model broke")
    monkeypatch.setattr(nodes_mod, "measure", broken)
    monkeypatch.setattr(nodes_mod, "QUEUED", 1)
    monkeypatch.setattr(nodes_mod, "BATCH", 2)
    feed = NodeFeed(_long_history(2_000), _nodes(jump_s=0.0), CONFIG)
    with pytest.raises(RuntimeError, match="node model broke"):
        for _ in feed:
            pass


def test_a_late_command_a_node_joins_to_its_calls_completion_sets_no_horizon():
    # CI, pottery on five masters (the ninth session's case, on a run of several nodes): the next
    # acquire's thread sent SET (seq 185) on node1's connection, then the previous release's own
    # thread its late EVALSHA there (186), written as late_sent after the release's completion
    # and before the acquire's. The node's view joins 186 to the release's completion, which is
    # read first: had 186 set the horizon, the SET would have been "in no sent list".
    from leasecheck.checkers.model.join import Joiner
    from leasecheck.checkers.read.digest import Digest
    from leasecheck.checkers.read.ops import LATE_ENTRIES
    conn = "w1.s0.c3@node1"
    ev = [
        {"time": 1, "process": "w1.s0", "type": "invoke", "f": "release", "attempt": "w1.s0.91", "key": KEY},
        {"time": 2, "process": "w1.s0", "type": "ok", "f": "release", "attempt": "w1.s0.91", "key": KEY,
         "value": True, "sent": [[conn, 184, "EVALSHA"]]},
        {"time": 3, "process": "w1.s0", "type": "invoke", "f": "acquire", "attempt": "w1.s0.92", "key": KEY},
        {"time": 4, "process": "w1.s0", "type": "late_sent", "f": "release", "attempt": "w1.s0.91", "key": KEY,
         "invoked": 1, "sent": [[conn, 186, "EVALSHA"]]},
        {"time": 5, "process": "w1.s0", "type": "fail", "f": "acquire", "attempt": "w1.s0.92", "key": KEY,
         "value": False, "sent": [[conn, 185, "SET", 0]]},
    ]
    for i, e in enumerate(ev):
        e["index"] = i
    view = NodeView("node1")
    seen = [x for e in ev for x in view.feed(e)] + view.close()
    release = next(e for e in seen if e.get("f") == "release" and e["type"] != "invoke")
    assert release["sent"] == [[conn, 184, "EVALSHA"], [conn, 186, "EVALSHA"]] and release[LATE_ENTRIES] == 1
    joiner = Joiner()
    digest = Digest(on_late=joiner.add_late, joiner=joiner)
    for e in seen[:2]:
        digest.feed(e)
    assert joiner.horizon[conn] == 184          # the late 186 is waited for, but bounds nothing
    for e in seen[2:]:
        digest.feed(e)
    assert set(joiner.wanted[conn]) == {184, 185, 186} and joiner.horizon[conn] == 185
