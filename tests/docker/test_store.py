"""DockerStore: the container the harness creates, faults and removes."""
import time

import pytest
import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

from leasecheck.harness.stores.container import DockerStore
from leasecheck.harness.faults.clock import write_offset
from leasecheck.harness.nemesis.heal import Ledger


@pytest.fixture
def started(tmp_path, store_image, run_containers):
    s = DockerStore(store_image, tmp_path, f"t{time.monotonic_ns()}", faketime_file=tmp_path / "faketime" / "store")
    s.start()
    yield s
    s.stop()
    assert run_containers(s.run_id) == []


def _client(s, timeout=1.0):
    return redis.Redis(host="127.0.0.1", port=s.port, socket_timeout=timeout, socket_connect_timeout=timeout,
                       retry=Retry(NoBackoff(), 0))


def test_loopback_only_no_privileges_labelled(started):
    s = started
    assert s.start_s is not None and s.start_s < 10
    assert _client(s).config_get("bind") == {"bind": "127.0.0.1"}
    assert _client(s).config_get("save") == {"save": ""}
    attrs = s.container.attrs
    host = attrs["HostConfig"]
    assert host["NetworkMode"] == "host" and not host["Privileged"] and host["CapDrop"] == ["ALL"]
    assert host["ReadonlyRootfs"] and not host["PortBindings"]
    assert attrs["Config"]["Labels"]["leasecheck"] == "1"
    assert attrs["Config"]["Labels"]["leasecheck.run"] == s.run_id
    assert all(m["Mode"] == "ro" for m in attrs["Mounts"])


def test_pause_freezes_and_resume_thaws(started):
    s = started
    c = _client(s, timeout=0.5)
    c.set("k", "v")
    s.pause()
    with pytest.raises(redis.TimeoutError):
        c.get("k")
    s.resume()
    assert _client(s).get("k") == b"v"


def test_pause_is_healed_through_the_ledger(started, tmp_path):
    s = started
    ledger = Ledger(tmp_path)
    ident = ledger.add(s.resume_entry())
    s.pause()
    assert '"docker-unpause"' in (tmp_path / "faults-active.json").read_text()
    assert ledger.heal(ident) is None
    assert _client(s).ping()


def test_kill_and_restart_on_the_same_port_empty(started):
    s = started
    port = s.port
    _client(s).set("k", "v")
    s.kill()
    with pytest.raises(redis.ConnectionError):
        _client(s).ping()
    s.restart()
    assert s.port == port and _client(s).dbsize() == 0


def test_clock_follows_the_timestamp_file(started, tmp_path):
    s = started
    write_offset(tmp_path / "faketime" / "store", 30)
    secs, _ = _client(s).time()
    assert 29 < secs - time.time() < 31
    write_offset(tmp_path / "faketime" / "store", 0)
    secs, _ = _client(s).time()
    assert abs(secs - time.time()) < 1.5


def test_stop_saves_the_log_and_removes_the_container(tmp_path, store_image, run_containers):
    s = DockerStore(store_image, tmp_path, f"t{time.monotonic_ns()}")
    s.start()
    s.pause()                                   # even a frozen container goes
    s.stop()
    assert run_containers(s.run_id) == []
    assert "Redis is starting" in (tmp_path / "store.log").read_text()
