"""--topology replicated end to end: a primary, a replica and three Sentinels; token-cas through
a client that follows the Sentinels; the failover fault with and without a cut of the primary's
replication; the scenario whose expected verdict is written in its file."""
import json
import re
import socket
from pathlib import Path

import pytest

from tests.conftest import assert_claim_lost_in_failover

from leasecheck.checkers.model.nodes import measure_nodes, open_node_audits

pytestmark = pytest.mark.integration
ROOT = Path(__file__).resolve().parents[2]
SCENARIO = ROOT / "scenarios" / "failover-loses-claim.toml"


def _history(run_dir: Path) -> list[dict]:
    return [json.loads(line) for line in (run_dir / "history.jsonl").read_text().splitlines()]


def _nothing_listens(ports) -> bool:
    for port in ports:
        with socket.socket() as s:
            s.settimeout(0.5)
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return False
    return True


def _failover(results: dict) -> dict:
    (fault,) = [f for f in results["faults"] if f["fault"] == "failover"]
    return fault


def test_the_failover_scenario_gives_the_verdict_its_file_states(leasecheck):
    expected = int(re.search(r"Expected: exit (\d)", SCENARIO.read_text()).group(1))
    r = leasecheck("run", "--scenario", str(SCENARIO))
    assert r.code == expected == 1, r.out + r.err
    d = r.run_dir
    assert_claim_lost_in_failover(r)
    assert "split brain" in r.out and "no claim won on a former primary" in r.out
    config = json.loads((d / "config.json").read_text())
    ports = [n["port"] for n in config["store_nodes"]] + [n["peer_port"] for n in config["store_nodes"]]
    assert _nothing_listens(ports + config["sentinel_ports"])


def test_a_failover_without_lag_loses_no_claim_and_the_client_follows_the_new_primary(leasecheck, tmp_path):
    scenario = tmp_path / "failover-no-lag.toml"
    # ... and a short pause of `primary` after the failover: it finds node2, the primary by then
    # (the failover holds node1 stopped until a Sentinel names node2, however long that takes).
    scenario.write_text(SCENARIO.read_text().replace('lag = "800ms"\n', "").replace(
        'name = "failover-loses-claim"', 'name = "failover-no-lag"').replace('time_limit = "6s"', 'time_limit = "7.5s"')
        + '\n[[event]]\nat = 6.5\nfault = "pause"\ntarget = "primary"\nduration = 0.3\n')
    r = leasecheck("run", "--scenario", str(scenario))
    res, d = r.results, r.run_dir
    # A worker whose Sentinel lookup races the switch at the heal can still win the key on the
    # continued node1 while another holds it on node2 (measured in about 1 of 9 such runs): then the
    # split brain, and nothing else, fails the run.
    if r.code == 1 and res["split_brain"]["count"]:
        assert all(x.startswith("split brain:") for x in res["reasons"]), res["reasons"]
    else:
        assert r.code == 0, r.out + r.err
        assert res["split_brain"]["count"] == 0
    m = _failover(res)["measured"]
    (pause,) = [f for f in res["faults"] if f["fault"] == "pause"]
    assert pause["measured"]["processes"] == ["node2"] and pause["took_effect"] is True
    assert [e["node"] for e in _history(d) if e.get("type") == "fault_start"] == ["node1", "node2"]
    assert m["promoted"] == "node2" and m["unreplicated_bytes"] == 0 and 0 < m["promotion_s"] < 10
    assert m["sentinels_switched_s"] is not None and m["extended_s"] >= 0.0
    assert m["rejoined_s"] is not None           # the Sentinels made node1 a replica of node2
    fo = res["failover"]
    assert res["claims"]["lost_in_failover"] == 0 and fo["examples"] == []
    assert res["audit"]["nodes"]["node2"]["claims"] > res["audit"]["nodes"]["node2"]["copies"]
    # After the switch the workers' commands went to node2, on connections named after it, each
    # announced in node2's audit: the join attributes them there.
    events = _history(d)
    on_node2 = {s[0] for e in events if e.get("f") == "acquire" and e["type"] == "ok"
                for s in e.get("sent") or [] if s[0].endswith("@node2")}
    assert on_node2
    audit2 = (d / "audit-node2.log").read_text()
    assert all(f'"leasecheck:conn:{conn}"' in audit2 for conn in on_node2)
    # ... and every acquire won on node2 is a claim node2's audit attributes to that very attempt.
    config = json.loads((d / "config.json").read_text())
    nodes = {n.name: n for n in measure_nodes(events, open_node_audits(d, config), config)}
    won = {e["attempt"] for e in events if e.get("f") == "acquire" and e["type"] == "ok" and e.get("value") is True
           and any(s[0].endswith("@node2") for s in e["sent"])}
    assert won and won <= {c.owner for c in nodes["node2"].claims}
    assert not nodes["node2"].problems
    assert (d / "sentinel-1.log").exists() and "+switch-master" in (d / "sentinel-1.log").read_text()


def test_replicas_without_the_replicated_topology_are_refused(leasecheck):
    r = leasecheck("run", "--replicas", "2", "--time-limit", "1s")
    assert r.code == 64
    assert "--replicas 2: replicas and Sentinels belong to a primary with replicas; add --topology replicated" in r.err
