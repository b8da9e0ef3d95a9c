"""Mutual exclusion across Redlock masters: the validity rule (ttl − elapsed − drift, drift =
1% of the ttl + 2 ms), holds built from the history, overlaps of two holds on one key, and the
whole check on a small hand-made three-node run whose node2 clock jumps."""
import json

import pytest

from leasecheck.checkers import check
from leasecheck.checkers.read.audit import AuditStream
from leasecheck.checkers.measures.mutual_exclusion import Hold, drift_ns, holds, promised_end_ns, violations
from leasecheck.checkers.model.nodes import only_node
from leasecheck.protocol import node_of_conn
from leasecheck.workloads.leases.redlock import drift_ms, validity_ms

MS = 1_000_000
KEY = "lc:r1:job:0"


def test_the_lease_and_the_checker_use_the_same_validity_rule():
    assert drift_ms(1000) == pytest.approx(12.0) and drift_ns(1000) == 12 * MS
    assert validity_ms(1000, 30) == pytest.approx(958.0)       # 1000 - 30 - 12
    assert validity_ms(100, 99) < 0                             # too slow: no lock
    # The checker's promise starts at the invocation, when the lease's clock had not started yet.
    assert promised_end_ns(100 * MS, 1000) == (100 + 1000 - 12) * MS


def _call(process, attempt, f, t0_ms, t1_ms, value, kind=None):
    base = {"process": process, "f": f, "attempt": attempt, "key": KEY}
    done = kind or ("ok" if value or f != "acquire" else "fail")
    return [dict(base, time=t0_ms * MS, type="invoke"), dict(base, time=t1_ms * MS, type=done, value=value)]


def test_a_hold_lasts_until_the_release_or_the_promise_whichever_comes_first():
    events = (_call("a", "a.0", "acquire", 100, 103, True) + _call("a", "a.0", "release", 600, 601, True)
              + _call("b", "b.0", "acquire", 700, 705, True))      # never releases
    a, b = holds(events, 1000)
    assert (a.attempt, a.start, a.end, a.released) == ("a.0", 103 * MS, 600 * MS, True)
    assert (b.attempt, b.start, b.end, b.released) == ("b.0", 705 * MS, (700 + 988) * MS, False)
    assert violations([a, b]) == []


def test_lost_and_unknown_acquires_hold_nothing():
    events = (_call("a", "a.0", "acquire", 100, 103, False)
              + _call("b", "b.0", "acquire", 100, 400, None, kind="info"))
    assert holds(events, 1000) == []


def test_two_holds_on_one_key_that_overlap_violate_mutual_exclusion():
    a = Hold("a.0", KEY, 100 * MS, 103 * MS, 1088 * MS, False)
    b = Hold("b.0", KEY, 500 * MS, 505 * MS, 1493 * MS, False)
    other_key = Hold("c.0", "lc:r1:job:1", 500 * MS, 505 * MS, 1493 * MS, False)
    after = Hold("d.0", KEY, 1500 * MS, 1501 * MS, 2400 * MS, False)
    assert violations([a, b, other_key, after]) == [(a, b)]
    # Touching ends do not overlap: b won exactly when a's promise ran out.
    assert violations([a, Hold("b.0", KEY, 1000 * MS, 1088 * MS, 2000 * MS, False)]) == []


# -- a hand-made run of three masters -------------------------------------------------------------
# A wins node1 and node2 (node3 unreachable for it) at 0.103 s, and works until 0.900 s. node2's
# clock jumps +10 s at 0.300 s, so A's key there expires; B then wins node2 and node3 at 0.505 s.
NODES = ("node1", "node2", "node3")
CONFIG = {"key_prefix": "lc:r1:", "ttl_ms": 1000, "lease": "redlock", "topology": "redlock", "nodes": 3,
          "store_nodes": [{"name": n, "port": 7000 + i, "client_port": None} for i, n in enumerate(NODES)]}
BASE = 1795951565.0   # every store's clock at history time 0


def _history(b_wins: bool) -> list[dict]:
    a_sent = [["a.s0.c0@node1", 0, "SET"], ["a.s0.c1@node2", 0, "SET"]]
    b_sent = [["b.s0.c0@node1", 0, "SET"], ["b.s0.c1@node2", 0, "SET"], ["b.s0.c2@node3", 0, "SET"]]
    ev = [{"time": 0, "process": "harness", "type": "run_start", "config": CONFIG}]
    ev += _call("a.s0", "a.s0.0", "acquire", 100, 103, True)
    ev[-1]["sent"] = a_sent
    ev += _call("b.s0", "b.s0.0", "acquire", 500, 505, b_wins)
    ev[-1]["sent"] = b_sent
    ev += _call("a.s0", "a.s0.0", "release", 900, 902, True)
    ev[-1]["sent"] = [["a.s0.c0@node1", 1, "DEL"], ["a.s0.c1@node2", 1, "DEL"]]
    for i, e in enumerate(ev):
        e["index"] = i
    return ev


def _audit(lines: list[tuple[float, str, str]]) -> AuditStream:
    text = "OK\n" + "".join(f"{BASE + t:.6f} [0 127.0.0.1:{addr}] {cmd}\n" for t, addr, cmd in lines)
    return AuditStream(text=text + f'{BASE + 2:.6f} [0 127.0.0.1:1] "ECHO" "leasecheck:audit-end"\n# end\n')


def _nodes(jump_s: float) -> dict:
    conn = '"ECHO" "leasecheck:conn:{}"'
    a_set, b_set = f'"SET" "{KEY}" "tokA" "NX" "PX" "1000"', f'"SET" "{KEY}" "tokB" "NX" "PX" "1000"'
    node1 = [(0.1, "5001", conn.format("a.s0.c0@node1")), (0.101, "5001", a_set),
             (0.5, "5002", conn.format("b.s0.c0@node1")), (0.501, "5002", b_set),
             (0.9, "5001", f'"DEL" "{KEY}"')]
    node2 = [(0.1, "5001", conn.format("a.s0.c1@node2")), (0.102, "5001", a_set),
             (0.5 + jump_s, "5002", conn.format("b.s0.c1@node2")), (0.502 + jump_s, "5002", b_set),
             (0.901 + jump_s, "5001", f'"DEL" "{KEY}"')]
    node3 = [(0.5, "5002", conn.format("b.s0.c2@node3")), (0.503, "5002", b_set)]
    clocks = {"node1": [], "node2": [{"time": 300 * MS, "store_us": round((BASE + 0.3 + jump_s) * 1e6)}],
              "node3": []}
    base = [{"time": 0, "store_us": round(BASE * 1e6)}, {"time": 200 * MS, "store_us": round((BASE + 0.2) * 1e6)}]
    return {name: (_audit(lines), base + clocks[name])
            for name, lines in zip(NODES, (node1, node2, node3))}


def test_a_clock_jump_on_one_master_gives_two_attempts_the_lock_with_a_witness_per_node():
    r = check(_history(b_wins=True), None, CONFIG, nodes=_nodes(jump_s=10.0))
    assert r["valid"] is False
    me = r["mutual_exclusion"]
    assert (me["holds"], me["violations"]) == (2, 1)
    assert me["first"]["first"] == "a.s0.0" and me["first"]["second"] == "b.s0.0"
    assert me["first"]["overlap_s"] == pytest.approx(0.395)
    assert me["claims_per_node"] == {"node1": 1, "node2": 2, "node3": 1}
    assert "both on node2" in r["reasons"][0]
    assert me["first"]["lost"] == [{"node": "node2", "by_s": 0.502, "fate": "expired", "faults": ""}]
    assert r["reasons"][0].endswith("a.s0.0 lost its claim on node2 by 0.502 s (expired)")
    md = r["witness"]["markdown"]
    rows = {line.split(" | ")[0].strip("| "): line for line in md.splitlines() if line.startswith("| node")}
    assert set(rows) == {"node", "node1", "node2", "node3"}
    assert "expired by 0.502 s" in rows["node2"] and "created 0.502 s" in rows["node2"]
    assert rows["node3"].split(" | ")[1] == "—"


def test_without_the_jump_the_second_attempt_loses_and_the_run_is_valid():
    r = check(_history(b_wins=False), None, CONFIG, nodes=_nodes(jump_s=0.0))
    assert r["valid"] is True, r["reasons"]
    assert r["mutual_exclusion"]["violations"] == 0 and r["foreign_releases"] == 0
    assert r["reasons"][0].startswith("mutual exclusion held: 1 won acquire(s) on 3 masters")
    assert r["audit"]["present"] is True and r["audit"]["complete"] is True
    assert r["audit"]["lines"] == 15 and {n: a["lines"] for n, a in r["audit"]["nodes"].items()} == \
        {"node1": 6, "node2": 6, "node3": 3}   # with each audit's end marker


def test_a_missing_node_audit_leaves_the_verdict_unknown():
    nodes = _nodes(jump_s=0.0)
    del nodes["node3"]
    r = check(_history(b_wins=False), None, CONFIG, nodes=nodes)
    assert r["valid"] == "unknown" and any("no audit for node3" in x for x in r["reasons"])
    assert r["audit"]["present"] is True and r["audit"]["complete"] is False


def test_each_node_sees_only_its_own_commands_and_no_call_result():
    ev = only_node(_history(b_wins=True), "node2")
    acquire = ev[2]
    assert acquire["sent"] == [["a.s0.c1@node2", 0, "SET"]] and acquire["type"] == "info" and "value" not in acquire
    assert node_of_conn("w0.s0.c3@node2") == "node2" and node_of_conn("w0.s0.c3") is None


def test_a_single_store_result_has_no_mutual_exclusion_field_nor_part():
    events = [{"time": 0, "process": "harness", "type": "run_start", "index": 0,
               "config": {"key_prefix": "lc:r1:", "ttl_ms": 1000}}]
    parts = []
    r = check(events, None, {"key_prefix": "lc:r1:", "ttl_ms": 1000}, parts=parts)
    assert "mutual_exclusion" not in r and "mutual_exclusion" not in json.dumps(r)
    assert "mutual_exclusion" not in [name for name, _ in parts] and "foreign_releases" in [n for n, _ in parts]
    parts = []
    check(_history(b_wins=False), None, CONFIG, nodes=_nodes(jump_s=0.0), parts=parts)
    assert "mutual_exclusion" in [name for name, _ in parts]


# -- commands a lease's own thread sent after its call returned (late_sent) ------------------------
def _late(ev: list[dict], where: str) -> list[dict]:
    """A's SET to node2 sent by the library after A's acquire returned: taken out of the acquire's
    `sent` and written as `late_sent` of that call, just before (`before`) or after its completion."""
    ev = [dict(e) for e in ev]
    done = next(i for i, e in enumerate(ev) if e.get("attempt") == "a.s0.0" and e["type"] == "ok")
    invoked = ev[done - 1]["time"]
    ev[done]["sent"] = [s for s in ev[done]["sent"] if s[0] != "a.s0.c1@node2"]
    late = {"time": ev[done]["time"] + (-1 if where == "before" else 1) * MS, "process": "a.s0", "type": "late_sent",
            "f": "acquire", "attempt": "a.s0.0", "key": KEY, "invoked": invoked, "sent": [["a.s0.c1@node2", 0, "SET"]]}
    ev.insert(done if where == "before" else done + 1, late)
    for i, e in enumerate(ev):
        e["index"] = i
    return ev


@pytest.mark.parametrize("where", ["before", "after"])
def test_a_command_sent_after_its_call_returned_is_credited_to_that_call(where):
    ev = _late(_history(b_wins=False), where)
    node2 = only_node(ev, "node2")
    (acquire,) = [e for e in node2 if e.get("attempt") == "a.s0.0" and e["type"] == "info" and e["f"] == "acquire"]
    assert acquire["sent"] == [["a.s0.c1@node2", 0, "SET"]]
    assert not [e for e in node2 if e["type"] == "late_sent"]
    unindexed = [[{k: v for k, v in e.items() if k != "index"} for e in only_node(h, "node1")]
                 for h in (ev, _history(b_wins=False))]
    assert unindexed[0] == unindexed[1]        # node1's view is untouched
    r = check(ev, None, CONFIG, nodes=_nodes(jump_s=0.0))
    assert r["valid"] is True and r["disagreements"] == [] and r["problems"] == []
    assert r["mutual_exclusion"]["claims_per_node"] == {"node1": 1, "node2": 1, "node3": 1}


def test_a_command_no_call_listed_is_a_disagreement_of_its_node():
    ev = _history(b_wins=False)
    ev[2] = dict(ev[2], sent=[s for s in ev[2]["sent"] if s[0] != "a.s0.c1@node2"])   # A's SET on node2: nowhere
    r = check(ev, None, CONFIG, nodes=_nodes(jump_s=0.0))
    orphan = "SET from a.s0.c1@node2 seq 0 is in no sent list"
    assert [d for d in r["disagreements"] if d.startswith("node2: ") and orphan in d]


def test_claims_under_a_library_key_of_their_own_are_found_by_attempt():
    """pottery keeps its claim under ``redlock:`` + the job key: the witness finds it by attempt."""
    nodes = {}
    for name, (audit, samples) in _nodes(jump_s=10.0).items():
        nodes[name] = (AuditStream(text=audit.text.replace(f'"{KEY}"', f'"redlock:{KEY}"')), samples)
    r = check(_history(b_wins=True), None, CONFIG, nodes=nodes)
    assert r["valid"] is False and "both on node2" in r["reasons"][0]
    assert r["mutual_exclusion"]["first"]["lost"][0]["node"] == "node2"
    rows = {line.split(" | ")[0].strip("| "): line for line in r["witness"]["markdown"].splitlines()
            if line.startswith("| node")}
    assert "expired by 0.502 s" in rows["node2"] and "created 0.101 s" in rows["node1"]


def test_without_audits_the_history_alone_never_says_valid_but_still_finds_an_overlap():
    config = dict(CONFIG, audit=False)
    no_audits = {name: (None, []) for name in NODES}       # what open_node_audits gives for --no-audit
    r = check(_history(b_wins=False), None, config, nodes=no_audits)
    assert r["valid"] == "unknown"
    assert r["reasons"][0].startswith("recorded with --no-audit: the claims on each of the 3 masters are unseen")
    assert r["reasons"][0].endswith("run without --no-audit for a verdict")
    r = check(_history(b_wins=True), None, config, nodes=no_audits)
    assert r["valid"] is False and r["reasons"][0].startswith("mutual exclusion violated")
    assert "No master's audit was read" in r["witness"]["markdown"] and "| node |" not in r["witness"]["markdown"]
