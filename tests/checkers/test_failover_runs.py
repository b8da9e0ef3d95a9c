"""Real replicated runs, saved (tests/checkers/replicated): the failover scenario, whose cut lost
an acknowledged claim; the same scenario without the cut; and naive-del across a failover without
a cut (its scenario file beside it), whose release on the promoted node deleted another attempt's
claim there. Checked from their files alone."""
import json
from pathlib import Path

from leasecheck.checkers import check_run
from leasecheck.checkers.measures.measure import measure, replication_addresses
from leasecheck.checkers.model.nodes import only_node, open_node_audits

RUNS = Path(__file__).parent / "replicated"


def test_a_claim_acknowledged_during_the_cut_is_lost_in_failover_and_fails_the_run():
    r = check_run(RUNS / "failover-lost-bad")
    assert r["valid"] is False and r["reasons"][0].startswith("1 claim(s) lost in failover")
    f = r["failover"]
    assert f["failovers"] == [{"fault": 0, "primary_before": "node1", "promoted": "node2",
                               "stopped_s": f["failovers"][0]["stopped_s"], "promoted_s": f["failovers"][0]["promoted_s"]}]
    assert f["failovers"][0]["stopped_s"] < f["failovers"][0]["promoted_s"]
    (lost,) = f["examples"]
    assert (lost["node"], lost["promoted"], lost["fate"], lost["cause"]) == ("node1", "node2", "lost_in_failover", "failover")
    assert lost["created_s"] < f["failovers"][0]["stopped_s"] < lost["newcomer_won_s"] < lost["held_until_s"]
    # counted where every fate and every cause is: one claim lost in failover, one early loss by failover
    assert r["claims"]["lost_in_failover"] == 1 and r["early_loss"]["count"] == r["early_loss"]["by_cause"]["failover"] == 1
    assert r["early_loss"]["first"][0]["holder"] == lost["attempt"]
    assert r["early_loss"]["first"][0]["newcomer_start_s"] == lost["newcomer_won_s"]
    assert "failover 1" in r["diagnosis"][0]
    # ... and it is what let the newcomer in: the overlap's cause, the loss while held, in words
    assert r["overlap"]["causes"]["failover"] == r["overlap"]["count"] == 1
    assert r["lost_while_held"]["failover"] == 1 and sum(r["lost_while_held"].values()) == 1
    assert r["diagnosis"][1].startswith("1 claim was lost in a failover before its holder released it")
    assert r["witness"]["kind"] == "failover"        # the first violation's witness
    assert "| time (s) | what | node1 | node2 |" in r["witness"]["markdown"]
    assert "mutual_exclusion" not in r          # a replicated run is judged by `failover`


def test_the_same_failover_without_the_cut_loses_nothing():
    r = check_run(RUNS / "failover-nolag-ok")
    assert r["valid"] is True and r["claims"]["lost_in_failover"] == 0 and r["early_loss"]["count"] == 0
    assert r["failover"]["failovers"][0]["promoted"] == "node2" and r["failover"]["examples"] == []
    node2 = r["audit"]["nodes"]["node2"]
    assert node2["claims"] - node2["copies"] >= 1 and node2["copies"] >= 1
    assert r["audit"]["complete"] is True


def test_a_replicas_copies_come_from_its_primarys_peer_address_and_are_no_lost_attribution():
    run = RUNS / "failover-nolag-ok"
    config = json.loads((run / "config.json").read_text())
    events = [json.loads(line) for line in (run / "history.jsonl").read_text().splitlines()]
    assert replication_addresses(config) == {f"127.0.0.1:{n['peer_port']}" for n in config["store_nodes"]}
    audit, samples = open_node_audits(run, config)["node2"]
    m = measure(only_node(events, "node2"), audit, config, samples)
    copy = m.model.claims[0]                    # node1's first claim, as node2 applied it
    assert copy.copy and copy.owner is None and copy.token and m.problems == []
    # Without the peer addresses the same line is an unattributed create, reported as a problem.
    bare = dict(config, store_nodes=[{k: v for k, v in n.items() if k != "peer_port"} for n in config["store_nodes"]])
    audit, samples = open_node_audits(run, bare)["node2"]
    m = measure(only_node(events, "node2"), audit, bare, samples)
    assert any("created by an unattributed command" in p for p in m.problems)


def test_a_release_on_the_promoted_node_that_deletes_another_attempts_copy_is_a_foreign_release():
    """naive-del, no cut (scenario.toml beside the run): the first holder's claim expires during its
    7.5 s job, the other worker claims on node1, which replicates it; node1 is stopped, node2
    promoted; the first holder's DEL then reaches node2 and deletes the other's claim, a copy there."""
    r = check_run(RUNS / "failover-naive-del-foreign-bad")
    assert r["valid"] is False and r["foreign_releases"] == 2
    first = r["foreign_releases_first"][0]
    assert (first["attempt"], first["victim"], first["node"], first["command"]) == ("w0.s0.0", "w1.s0.99", "node2", "DEL")
    assert r["reasons"][0].startswith("2 foreign release(s): the first is attempt w0.s0.0's DEL on node2 "
                                      "(audit-node2.log line 164, 7.531 s)")
    assert r["reasons"][0].endswith("(its copy there, replicated from the primary)")
    assert r["failover"]["failovers"][0]["promoted_s"] < first["time_s"]       # after the promotion
    assert r["witness"]["kind"] == "foreign_release" and "its copy, replicated" in r["witness"]["summary"]
    assert r["claims"]["foreign_release"] == 2 and r["claims"]["lost_in_failover"] == 0
    assert r["audit"]["nodes"]["node2"]["copies"] == 2
