"""The terminal summary's line per store node: claims, the faults aimed at the node, foreign
releases there, and whether its audit is complete — from results.json alone."""
from leasecheck.checkers import check
from leasecheck.checkers.present.node_report import lines
from tests.checkers.test_mutual_exclusion import CONFIG, NODES, _history, _nodes


def _result(**audit_nodes):
    return {"audit": {"nodes": audit_nodes},
            "faults": [{"fault": "clock", "target": "node3", "start_s": 4.0, "end_s": 6.0,
                        "requested": {"size": 2.73109}, "took_effect": True},
                       {"fault": "partition", "target": "node2", "start_s": 0.5, "end_s": None, "requested": {}},
                       {"fault": "pause", "target": "store", "start_s": 1.0, "end_s": 1.6, "requested": {},
                        "took_effect": False},
                       {"fault": "pause", "target": "holder", "start_s": 2.0, "end_s": 3.0, "requested": {}}],
            "mutual_exclusion": {"foreign_releases_per_node": {"node1": 0, "node2": 2, "node3": 0}}}


def test_one_line_per_node_with_its_claims_faults_and_audit():
    r = _result(node1={"recorded": True, "complete": True, "claims": 412},
                node2={"recorded": True, "complete": False, "claims": 1},
                node3={"recorded": False, "complete": False, "claims": None})
    assert lines(r) == [
        "node1  412 claims, pause at 1.0 s for 0.6 s (did not take effect), audit complete",   # store: the first node
        "node2  1 claim, partition at 0.5 s, never healed, 2 foreign release(s), audit cut short",
        "node3  claims unknown, clock +2.731 s at 4.0 s for 2.0 s, no audit",
    ]


def test_a_run_of_one_store_has_no_node_lines():
    assert lines({"audit": {"present": True, "complete": True}, "faults": []}) == []


def test_the_checker_records_each_nodes_claims_and_audit_also_a_missing_one():
    nodes = _nodes(jump_s=0.0)
    del nodes["node3"]
    r = check(_history(b_wins=False), None, CONFIG, nodes=nodes)
    assert list(r["audit"]["nodes"]) == list(NODES)
    assert r["audit"]["nodes"]["node1"] == {"recorded": True, "complete": True, "lines": 6, "claims": 1}
    assert r["audit"]["nodes"]["node3"] == {"recorded": False, "complete": False, "lines": 0, "claims": None}
    assert lines(r) == ["node1  1 claim, audit complete", "node2  1 claim, audit complete",
                        "node3  claims unknown, no audit"]


def test_a_replicated_run_says_how_many_claims_were_copies_and_where_each_foreign_release_was():
    from tests.checkers import test_replica_copies as rc
    r = check(rc._history(), None, rc.CONFIG, nodes=rc._nodes())
    assert lines(r) == ["node1  2 claims, failover at 1.1 s for 1.4 s, audit complete",   # `primary` was node1
                        "node2  2 claims (2 copies of a primary's), 1 foreign release(s), audit complete"]


def test_a_fault_that_recorded_its_node_is_shown_on_that_node_alone():
    r = _result(node1={"recorded": True, "complete": True, "claims": 3},
                node2={"recorded": True, "complete": True, "claims": 5})
    r["faults"] = [{"fault": "evict", "target": "store", "node": "node2", "start_s": 5.0, "end_s": 6.0,
                    "requested": {}, "took_effect": True}]
    r["mutual_exclusion"] = {}
    assert lines(r) == ["node1  3 claims, audit complete", "node2  5 claims, evict at 5.0 s for 1.0 s, audit complete"]
