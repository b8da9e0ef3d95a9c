"""--topology replicated: its defaults and its refusals (one line naming the fix, before anything
starts), the primary/replica targets, the failover fault's own checks, and the workers' client
that follows the Sentinels on audited connections named after the node they reach."""
import pytest

from leasecheck.harness.settings.config import RunConfig
from leasecheck.harness.record.connection import FollowingConnection, SendTracker, make_sentinel_client
from leasecheck.harness.errors import UsageError
from leasecheck.harness.faults import FAULTS, nemesis_entries
from leasecheck.harness.run.preflight import preflight
from leasecheck.harness.reports.summary import _failover
from leasecheck.harness.stores.topology import node_names
from tests.conftest import refused_by_preflight


def test_replicated_defaults_to_a_primary_one_replica_and_three_sentinels():
    cfg = preflight(RunConfig(topology="replicated")).cfg
    assert (cfg.replicas, cfg.sentinels) == (1, 3) and node_names(cfg) == ("node1", "node2")
    cfg = preflight(RunConfig(topology="replicated", replicas=2, sentinels=5)).cfg
    assert node_names(cfg) == ("node1", "node2", "node3") and cfg.sentinels == 5


@pytest.mark.parametrize("kw,says", [
    ({"replicas": 2}, "--replicas 2: replicas and Sentinels belong to a primary with replicas; add --topology "
                      "replicated or drop this setting"),
    ({"sentinels": 3, "topology": "redlock", "lease": "redlock"}, "--sentinels 3: replicas and Sentinels belong"),
    ({"topology": "replicated", "replicas": 0}, "--replicas 0: a failover needs at least one replica"),
    ({"topology": "replicated", "sentinels": 2}, "--sentinels 2: an odd number of Sentinels"),
    ({"topology": "replicated", "nodes": 3}, "--nodes 3 counts redlock's masters"),
    ({"topology": "replicated", "lease": "redlock"}, "--lease redlock declares nodes = \"all\", and the replicas"),
    ({"topology": "replicated", "store_port": 7000}, "--store-port 7000: each of the 2 nodes takes a free port"),
    ({"topology": "replicated", "sink": True}, "drop --sink with --topology replicated"),
    ({"topology": "replicated", "store_url": "redis://127.0.0.1:6379/0"},
     "starts its own 2 nodes and 3 Sentinels (--backend embedded or docker); drop --backend compose/--store-url"),
    ({"topology": "replicated", "backend": "compose"},
     "starts its own 2 nodes and 3 Sentinels (--backend embedded or docker); drop --backend compose/--store-url"),
])
def test_bad_replicated_settings_are_refused_in_one_line(kw, says):
    message = refused_by_preflight(**kw)
    assert says in message and "\n" not in message


def test_the_docker_backend_may_run_the_replicated_topology():
    """Its nodes and Sentinels are containers (tests/docker/test_docker_replicated.py runs them)."""
    from leasecheck.harness.stores import topology
    from leasecheck.harness.run.preflight import Say
    from leasecheck.workloads.leases import load_lease

    cfg = topology.check(RunConfig(topology="replicated", backend="docker", lease="token-cas"),
                         load_lease("token-cas"), Say())
    assert (cfg.replicas, cfg.sentinels) == (1, 3)


def test_primary_and_replica_are_targets_of_a_replicated_run_only():
    cfg = preflight(RunConfig(topology="replicated")).cfg
    for fault in ("pause", "clock", "partition"):
        FAULTS[fault].validate(cfg, "primary")
        FAULTS[fault].validate(cfg, "replica")
    assert FAULTS["pause"].acts_as("primary") == "store" and FAULTS["partition"].acts_as("replica") == "workers"
    assert nemesis_entries("failover", cfg) == [("failover", "primary", None)]
    single = preflight(RunConfig()).cfg
    with pytest.raises(UsageError, match="only a replicated run has a primary"):
        FAULTS["pause"].validate(single, "primary")
    with pytest.raises(UsageError, match="a failover needs replicas and Sentinels; add --topology replicated"):
        FAULTS["failover"].validate(single, "primary")
    with pytest.raises(UsageError, match="failover targets are primary"):
        FAULTS["failover"].validate(cfg, "replica")
    with pytest.raises(UsageError, match="kill:primary: a node restarted empty loses its replication settings"):
        FAULTS["kill"].validate(cfg, "primary")


def test_the_failover_fault_describes_itself():
    f = FAULTS["failover"]
    assert f.default_target == "primary" and "sigcont" in f.undoes and "toxic" in f.undoes
    assert {"promoted", "promotion_s", "unreplicated_bytes", "rejoined_s", "took_effect"} <= set(f.measures)
    assert [p.key for p in f.params] == ["lag"]


def test_the_followers_connection_is_named_after_the_node_the_sentinels_name():
    tracker = SendTracker("w0.s0")
    nodes = [{"name": "node1", "port": 7001, "client_port": None, "peer_port": 8001},
             {"name": "node2", "port": 7002, "client_port": 9002, "peer_port": 8002}]
    client = make_sentinel_client(tracker, [26379], nodes)
    cls = client.connection_pool.connection_class
    assert issubclass(cls, FollowingConnection)
    assert cls.peers == {8001: ("node1", 7001), 8002: ("node2", 9002)}
    conn = cls(connection_pool=client.connection_pool.proxy)
    conn.connect_check_health = lambda **kw: None    # no server: only the address mapping is under test
    conn.connect_to(("127.0.0.1", 8002))
    assert (conn.node, conn.port) == ("node2", 9002)
    assert tracker.new_conn_id(conn.node) == "w0.s0.c0@node2"


def test_the_terminal_summary_has_a_failover_line():
    r = {"failover": {"failovers": [{"primary_before": "node1", "promoted": "node2", "promoted_s": 4.2}]},
         "claims": {"lost_in_failover": 1}, "early_loss": {"count": 1, "by_cause": {"failover": 1}}}
    assert _failover(r) == ("node1 -> node2 (promoted at 4.200 s); [red]1 claim(s) lost in failover[/], "
                            "[red]1 then held by another attempt (early loss, cause failover)[/]")
    assert _failover({"failover": {"failovers": []}, "claims": {"lost_in_failover": 0}}) == \
        "no failover happened; no acknowledged claim lost"
