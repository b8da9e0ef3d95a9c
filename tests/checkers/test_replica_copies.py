"""A replica's copies of its primary's claims have an owner: after a promotion, another attempt's
release that deletes the holder's claim as the promoted node had it (its copy) is a foreign
release, with a witness. A small hand-made replicated run: node1 the primary, node2 its replica
(node1's commands reach node2 from node1's peer address), a failover at 1.15 s."""
import pytest

from leasecheck.checkers import check
from leasecheck.checkers.read.audit import AuditStream
from leasecheck.checkers.measures.measure import measure
from leasecheck.checkers.model.nodes import CopyOwners, NodeMeasure, measure_nodes, only_node

MS = 1_000_000
KEY = "lc:r1:job:0"
BASE = 1795951565.0   # both stores' clocks at history time 0
NODE1_PEER, NODE2_PEER = 7101, 7102
CONFIG = {"key_prefix": "lc:r1:", "ttl_ms": 1000, "lease": "naive-del", "topology": "replicated",
          "store_nodes": [{"name": "node1", "port": 7001, "peer_port": NODE1_PEER, "client_port": None},
                          {"name": "node2", "port": 7002, "peer_port": NODE2_PEER, "client_port": None}]}


def _call(attempt, f, t0_ms, t1_ms, value, sent):
    base = {"process": attempt.rsplit(".", 1)[0], "f": f, "attempt": attempt, "key": KEY}
    return [dict(base, time=t0_ms * MS, type="invoke"), dict(base, time=t1_ms * MS, type="ok", value=value, sent=sent)]


def _job(attempt, start_ms, end_ms):
    base = {"process": attempt.rsplit(".", 1)[0], "attempt": attempt, "key": KEY}
    return [dict(base, time=start_ms * MS, type="job_start"), dict(base, time=end_ms * MS, type="job_end", aborted=False)]


def _history() -> list[dict]:
    """B claims at 0 s on node1 (1 s TTL) and works until 1.3 s; its claim expires at 1 s. A claims
    at 1.1 s on node1, which replicates it to node2; node1 is stopped at 1.2 s and node2 promoted at
    1.25 s. B's plain DEL at 1.3 s, through the Sentinels, reaches node2 and deletes A's claim there."""
    ev = [{"time": 0, "process": "harness", "type": "run_start", "config": CONFIG}]
    ev += _call("b.s0.0", "acquire", 0, 3, True, [["b.s0.c0@node1", 0, "SET"]]) + _job("b.s0.0", 4, 1300)
    ev += _call("a.s0.0", "acquire", 1100, 1103, True, [["a.s0.c0@node1", 0, "SET"]]) + _job("a.s0.0", 1104, 1900)
    ev.append({"time": 1150 * MS, "process": "nemesis", "type": "fault_start", "fault": "failover", "target": "primary",
               "n": 0, "requested": {"duration_s": 1.0, "size": None}, "node": "node1"})
    ev += _call("b.s0.0", "release", 1301, 1305, True, [["b.s0.c1@node2", 0, "DEL"]])
    ev += _call("a.s0.0", "release", 1900, 1904, False, [["a.s0.c1@node2", 0, "DEL"]])
    ev.append({"time": 2500 * MS, "process": "nemesis", "type": "fault_end", "fault": "failover", "target": "primary",
               "n": 0, "measured": {"primary_before": "node1", "promoted": "node2", "promotion_s": 0.05,
                                    "stopped_after_s": 0.05, "promoted_after_s": 0.1, "healed_after_s": 1.0,
                                    "rejoined_s": None, "lag_ms": 0, "took_effect": True,
                                    "why": "node2 answered ROLE master"}})
    ev.sort(key=lambda e: e["time"])
    for i, e in enumerate(ev):
        e["index"] = i
    return ev


def _audit(lines: list[tuple[float, int, str]]) -> AuditStream:
    text = "OK\n" + "".join(f"{BASE + t:.6f} [0 127.0.0.1:{addr}] {cmd}\n" for t, addr, cmd in lines)
    return AuditStream(text=text + f'{BASE + 3:.6f} [0 127.0.0.1:1] "ECHO" "leasecheck:audit-end"\n# end\n')


def _nodes() -> dict:
    conn = '"ECHO" "leasecheck:conn:{}"'
    b_set, a_set = f'"SET" "{KEY}" "tokB" "NX" "PX" "1000"', f'"SET" "{KEY}" "tokA" "NX" "PX" "1000"'
    node1 = [(0.0, 5001, conn.format("b.s0.c0@node1")), (0.001, 5001, b_set),
             (1.1, 5002, conn.format("a.s0.c0@node1")), (1.101, 5002, a_set)]
    # what node2 applied from node1 (its peer address), then the clients' commands once promoted
    node2 = [(0.0015, NODE1_PEER, f'"SET" "{KEY}" "tokB" "PX" "1000"'),
             (1.1012, NODE1_PEER, f'"DEL" "{KEY}"'),               # node1 expired B's claim before A's SET
             (1.1013, NODE1_PEER, f'"SET" "{KEY}" "tokA" "PX" "1000"'),
             (1.3, 6001, conn.format("b.s0.c1@node2")), (1.302, 6001, f'"DEL" "{KEY}"'),
             (1.9, 6002, conn.format("a.s0.c1@node2")), (1.901, 6002, f'"DEL" "{KEY}"')]
    clock = [{"time": 0, "store_us": round(BASE * 1e6)}, {"time": 2000 * MS, "store_us": round((BASE + 2) * 1e6)}]
    return {"node1": (_audit(node1), clock), "node2": (_audit(node2), clock)}


def test_a_copy_belongs_to_the_attempt_whose_create_wrote_its_value():
    events = _history()
    (node1, node2) = measure_nodes(events, _nodes(), CONFIG)
    assert [(c.owner, c.copy) for c in node1.claims] == [("b.s0.0", False), ("a.s0.0", False)]
    assert [(c.owner, c.copy, c.token) for c in node2.claims] == [("b.s0.0", True, "tokB"), ("a.s0.0", True, "tokA")]
    assert node2.copies == 2 and node1.copies == 0 and node2.problems == []
    # Without owners, B's DEL of A's copy removes a claim of nobody's: no foreign release seen.
    audit, samples = _nodes()["node2"]
    bare = measure(only_node(events, "node2"), audit, CONFIG, samples)
    assert [c.owner for c in bare.model.claims] == [None, None] and bare.model.foreign == []


def test_the_owner_is_the_last_create_of_that_value_before_the_copy():
    def claim(owner, token, at_s, copy=False):
        from leasecheck.checkers.model.claims import Claim
        return Claim(0, 0, KEY, owner, None, 1, at_s, None, token=token, copy=copy)
    from leasecheck.checkers.model.clock import StoreClock
    node = NodeMeasure("node1", [claim("a.1", "tok", 1.0), claim("c.3", "tok", 5.0), claim("b.2", "other", 2.0),
                                 claim("x.9", "tok", 0.5, copy=True)], [], StoreClock.fixed(0), True)
    owners = CopyOwners([node])
    assert owners(0, KEY, "tok", 1_001 * MS) == "a.1"      # a token used twice: the create before the copy
    assert owners(0, KEY, "tok", 5_010 * MS) == "c.3"
    assert owners(0, KEY, "tok", 4_990 * MS) == "c.3"      # within the two clocks' slack (50 ms)
    assert owners(0, KEY, "tok", 500 * MS) is None         # no create before it (copies are not creates)
    assert owners(0, KEY, "nope", 9_000 * MS) is None and owners(1, KEY, "tok", 9_000 * MS) is None


def test_another_attempts_release_of_the_holders_copy_on_the_promoted_node_is_a_foreign_release():
    r = check(_history(), None, CONFIG, nodes=_nodes())
    assert r["valid"] is False
    assert r["foreign_releases"] == 1
    (listed,) = r["foreign_releases_first"]
    assert (listed["attempt"], listed["victim"], listed["node"], listed["command"]) == ("b.s0.0", "a.s0.0", "node2", "DEL")
    assert listed["time_s"] == pytest.approx(1.302) and listed["line"] == 6
    assert r["reasons"][0] == ("1 foreign release(s): the first is attempt b.s0.0's DEL on node2 (audit-node2.log "
                               "line 6, 1.302 s), which deleted the claim of attempt a.s0.0 on lc:r1:job:0 (its copy "
                               "there, replicated from the primary)")
    w = r["witness"]
    assert w["kind"] == "foreign_release" and "audit-node2.log line 6" in w["summary"]
    assert "On node2 the claim of a.s0.0 was its copy" in w["summary"]
    rows = {row["cells"][0]: row for row in w["rows"] if row["cells"][0]}
    assert rows["DEL deletes B's claim"]["time_s"] == pytest.approx(1.302)
    # A's claim, live when node1 stopped, has its copy's fate; B's own expired during its job.
    assert r["claims"]["foreign_release"] == 1 and r["claims"]["expired_while_held"] == 1
    assert sum(r["claims"].values()) == 2
    assert r["audit"]["nodes"]["node2"]["copies"] == 2 and r["problems"] == []
    # why claims were lost while held, across the nodes: A's by B's release, B's by its deadline
    assert {k: v for k, v in r["lost_while_held"].items() if v} == {"foreign_release": 1, "deadline_passed": 1}


def test_on_one_endpoint_a_call_that_reached_one_node_keeps_its_outcome_there():
    events = _history()
    release = lambda ev: [e for e in ev if e.get("attempt") == "b.s0.0" and e.get("f") == "release" and "sent" in e]
    (kept,) = release(only_node(events, "node2", one_endpoint=True))
    assert kept["type"] == "ok" and kept["value"] is True and kept["sent"] == [["b.s0.c1@node2", 0, "DEL"]]
    (unknown,) = release(only_node(events, "node2"))                  # redlock: a majority's result
    assert unknown["type"] == "info" and "value" not in unknown
    # A call retried on the new primary after a failover reached both nodes: unknown on each.
    both = [dict(e, sent=[["b.s0.c0@node1", 1, "DEL"], ["b.s0.c1@node2", 0, "DEL"]]) if e in release(events) else e
            for e in events]
    for node in ("node1", "node2"):
        (call,) = release(only_node(both, node, one_endpoint=True))
        assert call["type"] == "info" and len(call["sent"]) == 1


def _jump_history() -> list[dict]:
    """No failover: A claims on node1 at 0.1 s (1 s TTL) and works until 0.9 s; node1's clock jumps
    +2 s at 0.3 s, so A's claim expires there at once; B's SET NX at 0.4 s wins on node1."""
    ev = [{"time": 0, "process": "harness", "type": "run_start", "config": CONFIG}]
    ev += _call("a.s0.0", "acquire", 100, 102, True, [["a.s0.c0@node1", 0, "SET"]]) + _job("a.s0.0", 103, 900)
    ev.append({"time": 300 * MS, "process": "nemesis", "type": "fault_start", "fault": "clock", "target": "primary",
               "n": 0, "requested": {"duration_s": 1.0, "size": 2.0}, "node": "node1"})
    ev += _call("b.s0.0", "acquire", 400, 402, True, [["b.s0.c0@node1", 0, "SET"]]) + _job("b.s0.0", 403, 600)
    ev.sort(key=lambda e: e["time"])
    for i, e in enumerate(ev):
        e["index"] = i
    return ev


def _jump_nodes() -> dict:
    conn = '"ECHO" "leasecheck:conn:{}"'
    a_set, b_set = f'"SET" "{KEY}" "tokA" "NX" "PX" "1000"', f'"SET" "{KEY}" "tokB" "NX" "PX" "1000"'
    node1 = [(0.1, 5001, conn.format("a.s0.c0@node1")), (0.101, 5001, a_set),
             (2.4, 5002, conn.format("b.s0.c0@node1")), (2.401, 5002, b_set)]        # node1's clock: +2 s
    node2 = [(0.1015, NODE1_PEER, f'"SET" "{KEY}" "tokA" "PX" "1000"'),
             (0.4015, NODE1_PEER, f'"SET" "{KEY}" "tokB" "PX" "1000"')]             # over A's live copy
    flat = [{"time": 0, "store_us": round(BASE * 1e6)}, {"time": 2000 * MS, "store_us": round((BASE + 2) * 1e6)}]
    jumped = [{"time": 0, "store_us": round(BASE * 1e6)}, {"time": 250 * MS, "store_us": round((BASE + 0.25) * 1e6)},
              {"time": 350 * MS, "store_us": round((BASE + 2.35) * 1e6)}]
    return {"node1": (_audit(node1), jumped), "node2": (_audit(node2), flat)}


def test_a_clock_jump_on_the_primary_is_an_early_loss_as_on_one_store_and_the_replicas_copies_add_nothing():
    r = check(_jump_history(), None, CONFIG, nodes=_jump_nodes())
    assert r["valid"] is False
    early = r["early_loss"]
    assert early["count"] == 1 and early["by_cause"]["clock_jump"] == 1 and early["undecided"] == 0
    (first,) = early["first"]
    assert (first["holder"], first["newcomer"], first["cause"]) == ("a.s0.0", "b.s0.0", "clock_jump")
    assert r["reasons"][0].startswith("1 claim(s) lost before the lease's deadline while another attempt then ran "
                                      "the same job (clock jump 1)")
    assert r["witness"]["kind"] == "early_loss" and "clock:primary (node1) jumps +2.000 s" in r["witness"]["markdown"]
    assert first["newcomer_start_s"] == 0.403 and first["deadline_s"] == 1.088
    assert sum(r["claims"].values()) == 2 and r["failover"]["failovers"] == []    # the copies are no claims
