"""Several store nodes on the docker backend: one container per node, faults that hit one node's
container alone, the Redlock scenarios' verdicts as on the embedded backend, and every node's
container gone (its output in that node's own log) after the run, after Ctrl-C and when swept
as a leftover; and ``ServerRole`` (a replica, a Sentinel) in containers."""
import json
import os
import re
import signal
import time
from pathlib import Path

import pytest
import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

from leasecheck.harness.faults.clock import write_offset
from leasecheck.harness.stores.container import DockerStore, remove_leftovers
from tests.docker.conftest import wait_for

SCENARIOS = Path(__file__).resolve().parents[2] / "scenarios"
NODES = [f"node{i}" for i in range(1, 6)]


def _client(port, timeout=1.0):
    return redis.Redis(host="127.0.0.1", port=port, socket_timeout=timeout, socket_connect_timeout=timeout,
                       retry=Retry(NoBackoff(), 0))


def _answers(port) -> bool:
    try:
        return _client(port, timeout=0.5).ping()
    except redis.RedisError:
        return False


def _expected_exit(scenario: Path) -> int:
    m = re.search(r"Expected: exit (\d)", scenario.read_text())
    assert m, f"{scenario} states no expected exit code"
    return int(m.group(1))


def _own_logs(run_dir: Path, ports: dict[str, int]) -> None:
    """Each node's log holds that node's server output (its own port), and only its."""
    for name, port in ports.items():
        text = (run_dir / f"store-{name}.log").read_text()
        assert f"port={port}." in text, name
        assert all(f"port={p}." not in text for other, p in ports.items() if other != name), name


def test_one_container_per_node_and_faults_hit_only_their_own(tmp_path, store_image, run_containers):
    run_id = f"t{time.monotonic_ns()}"
    stores = {n: DockerStore(store_image, tmp_path, run_id, faketime_file=tmp_path / "faketime" / f"store-{n}",
                             log_path=tmp_path / f"store-{n}.log", node=n) for n in ("node1", "node2", "node3")}
    try:
        for s in stores.values():
            s.start()
        ports = {n: s.port for n, s in stores.items()}
        assert len(set(ports.values())) == 3
        containers = run_containers(run_id)
        assert sorted(c.name for c in containers) == [f"leasecheck-store-{run_id}-{n}" for n in stores]
        for c in containers:
            node = c.labels["leasecheck.node"]
            assert c.labels["leasecheck.log"] == str((tmp_path / f"store-{node}.log").resolve())
            assert f"--port {ports[node]} --bind 127.0.0.1" in " ".join(c.attrs["Args"])

        stores["node2"].pause()                         # pause: node2 alone is frozen
        assert [n for n in stores if stores[n].is_paused()] == ["node2"]
        assert [n for n, p in ports.items() if _answers(p)] == ["node1", "node3"]
        stores["node2"].resume()

        write_offset(tmp_path / "faketime" / "store-node3", 30)     # clock: node3's alone moves
        skews = {n: _client(p).time()[0] - time.time() for n, p in ports.items()}
        assert 29 < skews["node3"] < 31 and abs(skews["node1"]) < 1.5 and abs(skews["node2"]) < 1.5

        _client(ports["node2"]).set("k", "v")            # kill + restart: node2 alone, back empty
        _client(ports["node1"]).set("k", "v")
        stores["node2"].kill()
        assert [n for n, p in ports.items() if _answers(p)] == ["node1", "node3"]
        stores["node2"].restart()
        assert stores["node2"].port == ports["node2"] and _client(ports["node2"]).dbsize() == 0
        assert _client(ports["node1"]).get("k") == b"v"

        stores["node1"].stop()                          # a node's stop removes its container only
        assert sorted(c.labels["leasecheck.node"] for c in run_containers(run_id)) == ["node2", "node3"]
        assert _answers(ports["node3"])
    finally:
        for s in stores.values():
            s.stop()
    assert run_containers(run_id) == []
    _own_logs(tmp_path, ports)


@pytest.mark.parametrize("scenario", ["redlock-clock-jump.toml", "redlock-holder-pause.toml"])
def test_redlock_scenarios_give_their_verdicts_on_docker(leasecheck, store_image, run_containers, scenario):
    path = SCENARIOS / scenario
    r = leasecheck("run", "--scenario", str(path), "--backend", "docker")
    assert r.code == _expected_exit(path), r.out + r.err
    res = r.results
    config = json.loads((r.run_dir / "config.json").read_text())
    assert config["backend"] == "docker" and [n["name"] for n in config["store_nodes"]] == NODES
    assert res["audit"]["complete"] is True and set(res["audit"]["nodes"]) == set(NODES)
    assert all(f["took_effect"] for f in res["faults"])
    me = res["mutual_exclusion"]
    if r.code == 1:                                     # redlock-clock-jump
        assert me["violations"] >= 1 and "both on node3" in res["reasons"][0]
        (lost,) = me["first"]["lost"]
        assert lost["node"] == "node3" and lost["fate"] == "expired"
        rows = {line.split(" | ")[0].strip("| ") for line in res["witness"]["markdown"].splitlines()
                if line.startswith("| node")}
        assert rows == {"node", *NODES}
        clock = next(f for f in res["faults"] if f["fault"] == "clock")
        assert clock["target"] == "node3" and abs(clock["measured"]["store_skew_s"] - 10.0) < 0.2
    else:                                               # redlock-holder-pause, the control
        assert me["violations"] == 0 and me["holds"] >= 3
    assert run_containers(config["run_id"]) == []
    _own_logs(r.run_dir, {n["name"]: n["port"] for n in config["store_nodes"]})


def test_a_run_kills_one_nodes_container_and_pauses_another(leasecheck, tmp_path, store_image, run_containers):
    scenario = tmp_path / "kill-pause.toml"
    scenario.write_text('[run]\ntopology = "redlock"\nnodes = 3\nlease = "redlock"\nworkers = 2\nttl = "1s"\n'
                        'job_duration = "0.2s"\ntime_limit = "3s"\nclient_timeout = "200ms"\nclient_retries = 0\n'
                        '[[event]]\nat = 1\nfault = "kill"\ntarget = "node2"\nduration = 0.5\n'
                        '[[event]]\nat = 2\nfault = "pause"\ntarget = "node3"\nduration = 0.5\n')
    r = leasecheck("run", "--scenario", str(scenario), "--backend", "docker")
    assert r.code == 0, r.out + r.err
    res = r.results
    kill, pause = res["faults"]
    assert kill["target"] == "node2" and kill["took_effect"] is True
    assert kill["measured"]["keys_after_restart"] == 0
    assert kill["measured"]["run_id_before"] != kill["measured"]["run_id_after"]
    assert pause["target"] == "node3" and pause["took_effect"] is True
    assert pause["measured"]["processes"] == ["node3"]
    assert ["# restart" in (r.run_dir / f"audit-{n}.log").read_text() for n in ("node1", "node2", "node3")] == \
        [False, True, False]
    assert res["audit"]["complete"] is True and res["mutual_exclusion"]["violations"] == 0
    config = json.loads((r.run_dir / "config.json").read_text())
    assert run_containers(config["run_id"]) == []
    _own_logs(r.run_dir, {n["name"]: n["port"] for n in config["store_nodes"]})


def _three_node_run(leasecheck, tmp_path):
    scenario = tmp_path / "s.toml"
    scenario.write_text('name = "docker-nodes"\n[run]\ntopology = "redlock"\nnodes = 3\nlease = "redlock"\n'
                        'workers = 2\nttl = "1s"\njob_duration = "0.2s"\ntime_limit = "60s"\n')
    proc = leasecheck.popen("run", "--backend", "docker", "--scenario", str(scenario))
    run_dir = wait_for(lambda: next((tmp_path / "results" / "docker-nodes").glob("*/config.json"), None)).parent
    wait_for(lambda: (run_dir / "history.d" / "harness.jsonl").exists())
    config = json.loads((run_dir / "config.json").read_text())
    return proc, run_dir, config["run_id"], {n["name"]: n["port"] for n in config["store_nodes"]}


def test_ctrl_c_removes_every_nodes_container(leasecheck, tmp_path, store_image, run_containers):
    proc, run_dir, run_id, ports = _three_node_run(leasecheck, tmp_path)
    containers = run_containers(run_id)
    assert sorted(c.labels["leasecheck.node"] for c in containers) == ["node1", "node2", "node3"]
    assert len({c.name for c in containers}) == 3 and len(set(ports.values())) == 3
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode in (0, 1, 2), out + err
    assert run_containers(run_id) == []
    assert not any(_answers(p) for p in ports.values())
    _own_logs(run_dir, ports)


def test_leftovers_go_each_to_its_nodes_log(leasecheck, tmp_path, store_image, run_containers):
    """What `leasecheck cleanup` does to a run's containers, for this run's only. The harness is
    frozen, not killed: a dead owner's containers are anyone's to sweep, and every run on this
    machine sweeps at its start (with its own version of the code)."""
    proc, run_dir, run_id, ports = _three_node_run(leasecheck, tmp_path)
    os.kill(proc.pid, signal.SIGSTOP)
    try:
        assert len(run_containers(run_id)) == 3
        assert not any((run_dir / f"store-{n}.log").exists() for n in ports)
        assert remove_leftovers(run_id=run_id) == []        # its harness is alive: not a leftover
        done = remove_leftovers(everything=True, run_id=run_id)
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.communicate(timeout=30)
    assert len(done) == 3 and all(line.startswith("removed container") for line in done), done
    assert run_containers(run_id) == []
    _own_logs(run_dir, ports)


def test_a_replica_and_a_sentinel_run_in_containers_and_fail_over(tmp_path, store_image, run_containers):
    """``ServerRole`` on the docker kind: ``--replicaof`` in a container, a Sentinel whose config
    folder is mounted writable; the pieces a replicated topology needs."""
    from leasecheck.harness.stores.base import MASTER
    from tests.harness.test_server_role import replica_and_sentinel_fail_over

    run_id = f"t{time.monotonic_ns()}"

    def make(name, role=MASTER):
        return DockerStore(store_image, tmp_path, run_id, log_path=tmp_path / f"store-{name}.log", node=name, role=role)

    assert replica_and_sentinel_fail_over(make, tmp_path) < 20
    assert run_containers(run_id) == []
    assert "+monitor master m 127.0.0.1" in (tmp_path / "store-node3.log").read_text()
    assert "MASTER MODE enabled" in (tmp_path / "store-node2.log").read_text()
