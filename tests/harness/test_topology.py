"""--topology and --nodes: refused with one line naming the fix before anything starts; a redlock
run's node names; faults aimed at a node; connections named after their node."""
import pytest

from leasecheck.harness.settings.config import RunConfig
from leasecheck.harness.record.connection import SendTracker
from leasecheck.harness.errors import UsageError
from leasecheck.harness.faults import FAULTS
from leasecheck.harness.run.preflight import preflight
from leasecheck.harness.settings.scenario import load_scenario
from leasecheck.harness.stores.topology import node_count, node_names
from tests.conftest import refused_by_preflight


def test_redlock_defaults_to_five_masters_and_records_the_count():
    plan = preflight(RunConfig(topology="redlock", lease="redlock"))
    assert plan.cfg.nodes == 5 and node_names(plan.cfg) == ("node1", "node2", "node3", "node4", "node5")
    assert node_count(RunConfig()) == 1 and node_names(RunConfig()) == ("node1",)


@pytest.mark.parametrize("kw,says", [
    ({"topology": "ring"}, "--topology ring: pick one of single, replicated, redlock"),
    ({"topology": "redlock", "lease": "redlock", "nodes": 4}, "--nodes 4: redlock needs an odd number of masters, at least 3"),
    ({"topology": "redlock", "lease": "redlock", "nodes": 1}, "--nodes 1: redlock needs an odd number"),
    ({"nodes": 3}, "--nodes 3: several nodes need a topology; add --topology redlock or drop --nodes"),
    ({"topology": "redlock", "lease": "token-cas"}, "--lease token-cas talks to one store, and --topology redlock has 5"),
    ({"topology": "redlock", "lease": "redlock", "store_port": 7000}, "--store-port 7000: each of the 5 masters"),
    ({"topology": "redlock", "lease": "redlock", "sink": True}, "drop --sink with --topology redlock"),
    ({"topology": "redlock", "lease": "redlock", "store_url": "redis://127.0.0.1:6379/0"},
     "--topology redlock starts its own 5 masters (--backend embedded or docker); drop --backend compose/--store-url"),
    ({"topology": "redlock", "lease": "redlock", "backend": "compose"}, "drop --backend compose/--store-url"),
])
def test_bad_topologies_are_refused_in_one_line(kw, says):
    assert says in refused_by_preflight(**kw)


def test_faults_take_a_node_of_the_run_as_their_target():
    cfg = preflight(RunConfig(topology="redlock", lease="redlock", nodes=3)).cfg
    for fault in ("clock", "pause", "partition", "evict"):
        FAULTS[fault].validate(cfg, "node3")
    assert FAULTS["clock"].acts_as("node2") == "store" and FAULTS["partition"].acts_as("node2") == "workers"
    with pytest.raises(UsageError, match="this run's nodes are node1, node2, node3"):
        FAULTS["pause"].validate(cfg, "node4")
    with pytest.raises(UsageError, match="oneway targets are replies, requests"):
        FAULTS["oneway"].validate(cfg, "node2")      # no node target: a direction of the workers' path
    plan = preflight(RunConfig(topology="redlock", lease="redlock", nemesis="clock:node2"))
    assert plan.skews == {"store"} and plan.targets == {("clock", "node2")}


def test_a_scenario_sets_the_topology_and_names_nodes_in_its_events(tmp_path):
    s = tmp_path / "s.toml"
    s.write_text('[run]\ntopology = "redlock"\nnodes = 3\nlease = "redlock"\n'
                 '[[event]]\nat = 1\nfault = "clock"\ntarget = "node3"\noffset = "+5s"\nduration = 1\n')
    values, steps = load_scenario(s)
    assert values["topology"] == "redlock" and values["nodes"] == 3 and steps[0]["target"] == "node3"
    s.write_text('[[event]]\nat = 1\nfault = "oneway"\ntarget = "node3"\nduration = 1\n')
    with pytest.raises(UsageError, match="oneway targets are replies, requests"):
        load_scenario(s)


def test_a_connection_to_one_node_among_several_is_named_after_it():
    t = SendTracker("w0.s0")
    assert [t.new_conn_id(), t.new_conn_id("node2"), t.new_conn_id("node3")] == \
        ["w0.s0.c0", "w0.s0.c1@node2", "w0.s0.c2@node3"]
