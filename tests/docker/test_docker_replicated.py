"""--topology replicated on the docker backend: the primary, its replica and the three Sentinels
each a container of the store image; the failover scenario gives the verdict its file states, the
failover fault freezing the primary's container (``docker pause``) and measuring the promotion as
on the embedded backend; nothing left afterwards — no container of the run, every port free — and
a killed harness's containers swept, each one's output in its own log."""
import json
import os
import re
import signal
import socket
from pathlib import Path

import pytest

from leasecheck.harness.stores.container import remove_leftovers
from tests.conftest import assert_claim_lost_in_failover
from tests.docker.conftest import wait_for

SCENARIO = Path(__file__).resolve().parents[2] / "scenarios" / "failover-loses-claim.toml"
MEMBERS = ["node1", "node2", "sentinel-1", "sentinel-2", "sentinel-3"]


def _listening(port) -> bool:
    with socket.socket() as s:
        s.settimeout(0.5)
        return s.connect_ex(("127.0.0.1", port)) == 0


def _ports(config: dict) -> dict[str, int]:
    """Every port of the run: each node's own and its peer proxy's, each Sentinel's."""
    ports = {n["name"]: n["port"] for n in config["store_nodes"]}
    ports |= {f"peer-{n['name']}": n["peer_port"] for n in config["store_nodes"]}
    return ports | {f"sentinel-{i}": p for i, p in enumerate(config["sentinel_ports"], 1)}


def _own_logs(run_dir: Path, ports: dict[str, int]) -> None:
    """Each container's output is in its own log: a node's in store-nodeN.log, a Sentinel's in
    sentinel-K.log, each naming its own port and no other member's."""
    members = {m: ports[m] for m in MEMBERS}
    for name, port in members.items():
        text = (run_dir / (f"store-{name}.log" if name.startswith("node") else f"{name}.log")).read_text()
        assert f"port={port}." in text, name
        assert all(f"port={p}." not in text for other, p in members.items() if other != name), name
    assert "Running mode=sentinel" in (run_dir / "sentinel-1.log").read_text()


def test_the_failover_scenario_gives_the_verdict_its_file_states_on_docker(leasecheck, store_image, run_containers):
    expected = int(re.search(r"Expected: exit (\d)", SCENARIO.read_text()).group(1))
    r = leasecheck("run", "--scenario", str(SCENARIO), "--backend", "docker")
    assert r.code == expected == 1, r.out + r.err
    res, d = r.results, r.run_dir
    m = assert_claim_lost_in_failover(r)
    assert m["stopped_with"] == "docker pause"
    assert m["rejoined_s"] is not None            # unpaused, node1 was made a replica of node2
    assert set(res["audit"]["nodes"]) == {"node1", "node2"}
    config = json.loads((d / "config.json").read_text())
    assert config["backend"] == "docker" and config["topology"] == "replicated"
    assert run_containers(config["run_id"]) == []
    ports = _ports(config)
    assert len(set(ports.values())) == 7 and not any(_listening(p) for p in ports.values())
    _own_logs(d, ports)
    assert all("+switch-master" in (d / f"sentinel-{i}.log").read_text() for i in (1, 2, 3))


def test_a_killed_harnesss_nodes_and_sentinels_are_swept_each_into_its_own_log(
        leasecheck, tmp_path, store_image, run_containers):
    scenario = tmp_path / "s.toml"
    scenario.write_text('name = "docker-replicated"\n[run]\ntopology = "replicated"\nlease = "token-cas"\n'
                        'workers = 1\nttl = "1s"\njob_duration = "0.2s"\ntime_limit = "60s"\n')
    proc = leasecheck.popen("run", "--backend", "docker", "--scenario", str(scenario))
    try:
        run_dir = wait_for(lambda: next((tmp_path / "results" / "docker-replicated").glob("*/config.json"),
                                         None)).parent
        wait_for(lambda: (run_dir / "history.d" / "harness.jsonl").exists())
        config = json.loads((run_dir / "config.json").read_text())
        run_id, ports = config["run_id"], _ports(config)
        containers = run_containers(run_id)
        assert sorted(c.labels["leasecheck.node"] for c in containers) == MEMBERS
        assert sorted(c.name for c in containers) == [f"leasecheck-store-{run_id}-{m}" for m in MEMBERS]
        assert all(c.attrs["HostConfig"]["NetworkMode"] == "host" for c in containers)
        assert all(f"--port {ports[c.labels['leasecheck.node']]} --bind 127.0.0.1" in " ".join(c.attrs["Args"])
                   for c in containers)
        assert remove_leftovers(run_id=run_id) == []        # its harness is alive: not a leftover
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.communicate(timeout=30)
    # Every run sweeps a dead harness's containers at its start, so a parallel run may get there
    # first (its removal may still be under way when this one lists them): either way they go,
    # each one's output in its own log.
    done = remove_leftovers(run_id=run_id)
    assert all(line.startswith("removed container") for line in done), done
    wait_for(lambda: run_containers(run_id) == [], 10)
    wait_for(lambda: not any(_listening(p) for p in ports.values()), 10)   # the peer proxy died with it
    _own_logs(run_dir, ports)
