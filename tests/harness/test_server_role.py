"""``ServerRole``: a node started with extra server arguments (a replica) or in sentinel mode, the
pieces of a primary/replica/Sentinel topology, on the embedded kind (``tests/docker`` runs the
same on containers)."""
from __future__ import annotations

import time
from pathlib import Path

import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

from leasecheck.harness.run.host import default_store_bin
from leasecheck.harness.stores.base import MASTER, ServerRole
from leasecheck.harness.stores.embedded import EmbeddedStore


def test_the_role_puts_the_config_file_first_and_its_arguments_last():
    defaults = ["--port", "7000", "--save", ""]
    assert MASTER.argv(defaults) == defaults
    assert ServerRole(args=("--replicaof", "127.0.0.1", "7001")).argv(defaults) == \
        [*defaults, "--replicaof", "127.0.0.1", "7001"]
    sentinel = ServerRole(sentinel_conf=Path("/run/s1/sentinel.conf"), args=("--sentinel", "monitor", "m"))
    assert sentinel.argv(defaults) == ["/run/s1/sentinel.conf", "--sentinel", *defaults, "--sentinel", "monitor", "m"]
    assert sentinel.argv(defaults, conf="/leasecheck/conf/sentinel.conf")[0] == "/leasecheck/conf/sentinel.conf"


def _client(port: int) -> redis.Redis:
    return redis.Redis(host="127.0.0.1", port=port, socket_timeout=2, socket_connect_timeout=2,
                       retry=Retry(NoBackoff(), 0))


def replica_and_sentinel_fail_over(make, run_dir: Path) -> float:
    """Start a primary, a replica of it and a Sentinel watching it with ``make(name, role)``;
    check the replica copies the primary and the Sentinel knows both; kill the primary and return
    how long the Sentinel took to name the replica the new primary. Stops everything it started."""
    stores = []

    def start(name, role=MASTER):
        store = make(name, role)
        stores.append(store)
        store.start()
        return store

    try:
        primary = start("node1")
        replica = start("node2", ServerRole(args=("--replicaof", "127.0.0.1", str(primary.port))))
        conf = run_dir / "sentinel-node3" / "sentinel.conf"
        conf.parent.mkdir(parents=True)
        conf.write_text("")
        sentinel = start("node3", ServerRole(sentinel_conf=conf, args=(
            "--sentinel", "monitor", "m", "127.0.0.1", str(primary.port), "1",
            "--sentinel", "down-after-milliseconds", "m", "300")))
        _client(primary.port).set("k", "v")
        deadline = time.monotonic() + 10
        while _client(replica.port).get("k") != b"v" or not _client(sentinel.port).execute_command(
                "SENTINEL", "replicas", "m"):
            assert time.monotonic() < deadline, "the replica or the Sentinel never caught up"
            time.sleep(0.05)
        assert _client(replica.port).info("replication")["role"] == "slave"
        assert f"sentinel monitor m 127.0.0.1 {primary.port}" in conf.read_text()   # rewritten by Sentinel
        primary.kill()
        t = time.monotonic()
        while _client(sentinel.port).execute_command("SENTINEL", "get-master-addr-by-name", "m")[1] != \
                str(replica.port).encode():
            assert time.monotonic() - t < 20, "the Sentinel never promoted the replica"
            time.sleep(0.05)
        took = time.monotonic() - t
        assert _client(replica.port).info("replication")["role"] == "master"
        return took
    finally:
        for store in stores:
            store.stop()


def test_an_embedded_replica_and_sentinel_fail_over(tmp_path):
    def make(name, role):
        return EmbeddedStore(default_store_bin(), tmp_path, log_path=tmp_path / f"store-{name}.log", role=role)

    assert replica_and_sentinel_fail_over(make, tmp_path) < 20
    assert "monitor master m 127.0.0.1" in (tmp_path / "store-node3.log").read_text()
