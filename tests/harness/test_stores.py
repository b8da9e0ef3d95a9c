"""Every store kind satisfies the ``Store`` protocol; the embedded one really starts on 127.0.0.1,
pauses, dies, comes back empty, follows its timestamp file and stops; the external one is checked
against it and refuses every fault."""
from __future__ import annotations

import os
import time
from pathlib import Path
from types import SimpleNamespace

import pytest
import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

from leasecheck.harness.errors import StoreError
from leasecheck.harness.faults.clock import write_offset
from leasecheck.harness.run.host import default_store_bin, free_port
from leasecheck.harness.stores import Store
from leasecheck.harness.stores.compose import UP_HINT, ComposeStore
from leasecheck.harness.stores.container import DockerStore
from leasecheck.harness.stores.embedded import EmbeddedStore
from leasecheck.harness.stores.external import ExternalStore
from leasecheck.harness.stores.kinds import store_for


def _client(store, timeout_s: float = 2.0) -> redis.Redis:
    return redis.Redis(host=store.host, port=store.port, socket_timeout=timeout_s,
                       socket_connect_timeout=timeout_s, retry=Retry(NoBackoff(), 0))


def _listening(port: int) -> list[str]:
    """Local addresses (hex, as /proc/net/tcp{,6} shows them) of the sockets listening on ``port``."""
    found = []
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with open(table) as f:
            next(f)
            for line in f:
                local, state = line.split()[1], line.split()[3]
                addr, _, hexport = local.partition(":")
                if state == "0A" and int(hexport, 16) == port:
                    found.append(addr)
    return found


def _soon(condition, timeout_s: float = 2.0) -> bool:
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


def _kinds(tmp_path: Path) -> list:
    return [EmbeddedStore(default_store_bin(), tmp_path),
            ExternalStore("127.0.0.1", 6379),
            DockerStore("leasecheck/redis-store:6.2", tmp_path, "t1"),   # not started: no daemon needed
            ComposeStore("127.0.0.1", 16379)]


def test_every_kind_satisfies_the_store_protocol(tmp_path):
    kinds = _kinds(tmp_path)
    assert [s.kind for s in kinds] == ["embedded", "external", "docker", "compose"]
    for store in kinds:
        assert isinstance(store, Store), store.kind
        assert store.host == "127.0.0.1" and store.address == f"127.0.0.1:{store.port}"
    managed = {s.kind: s.managed for s in kinds}
    assert managed == {"embedded": True, "external": False, "docker": True, "compose": False}
    # Its log: in the run directory for the kinds the harness starts, none for the others.
    assert [s.log_path for s in kinds] == [tmp_path.resolve() / "store.log", None, tmp_path / "store.log", None]


def test_the_protocol_check_can_fail():
    class NoKill:
        kind, managed, host, port, faketime_file, log_path, pid = "x", True, "127.0.0.1", 1, None, None, None
        address = "127.0.0.1:1"

        def start(self, timeout_s=1.0): ...
        def stop(self, timeout_s=1.0): ...
        def pause(self): ...
        def resume(self): ...
        def resume_entry(self): return {}
        def is_paused(self): return False
        def restart(self, timeout_s=1.0): ...

    assert not isinstance(NoKill(), Store)
    NoKill.kill = lambda self: None
    assert isinstance(NoKill(), Store)


def test_embedded_store_lifecycle_on_loopback(tmp_path):
    store = EmbeddedStore(default_store_bin(), tmp_path, log_path=tmp_path / "logs" / "node1.log")
    (tmp_path / "logs").mkdir()
    try:
        store.start()
        pid = store.pid
        assert store.port and _listening(store.port) == ["0100007F"]     # 127.0.0.1 only
        c = _client(store)
        assert c.set("k", "v") and c.get("k") == b"v"

        store.pause()
        assert _soon(store.is_paused)          # SIGSTOP is delivered asynchronously
        with pytest.raises(redis.TimeoutError):
            _client(store, 0.3).ping()
        store.resume()
        assert _soon(lambda: not store.is_paused()) and c.ping()

        store.kill()
        with pytest.raises(redis.ConnectionError):
            _client(store, 0.5).ping()
        port = store.port
        store.restart()
        restarted = store.pid
        assert store.port == port and restarted != pid
        assert _client(store).dbsize() == 0                                # volatile: back empty
    finally:
        store.stop()
    assert store.pid is None
    with pytest.raises(ProcessLookupError):
        os.kill(restarted, 0)                                              # stopped and reaped
    assert _listening(port) == []
    assert "Ready to accept connections" in (tmp_path / "logs" / "node1.log").read_text()


def test_embedded_store_clock_follows_its_timestamp_file(tmp_path):
    (tmp_path / "faketime").mkdir()
    store = EmbeddedStore(default_store_bin(), tmp_path, faketime_file=tmp_path / "faketime" / "store")
    assert store.faketime_file == (tmp_path / "faketime" / "store").resolve()
    assert store.faketime_file.read_text() == "+0\n"          # written before the store starts
    try:
        store.start()
        c = _client(store)
        before = c.time()[0] - time.time()
        write_offset(store.faketime_file, 100)
        after = c.time()[0] - time.time()
        assert abs(before) < 2 and 98 < after < 102
    finally:
        store.stop()


def test_an_embedded_store_without_a_clock_file_is_not_faked(tmp_path):
    store = EmbeddedStore(default_store_bin(), tmp_path)
    assert store.faketime_file is None and store.env is None


def test_external_store_against_an_embedded_one(store):
    ext = ExternalStore(store.host, store.port)
    ext.start()                                   # it answers PING: nothing else is done to it
    assert ext.address == store.address and ext.pid is None and not ext.is_paused()
    for fault in (ext.pause, ext.resume, ext.resume_entry, ext.kill, ext.restart):
        with pytest.raises(StoreError, match="never faults a store it did not start"):
            fault()
    ext.stop()
    assert _client(store).ping()                  # stopping it leaves the store running


def test_an_external_store_that_does_not_answer_says_so_in_one_line():
    port = free_port()
    with pytest.raises(StoreError) as e:
        ExternalStore("127.0.0.1", port).start(timeout_s=0.5)
    assert f"--store-url redis://127.0.0.1:{port}/0 does not answer" in str(e.value)
    assert "\n" not in str(e.value)
    with pytest.raises(StoreError) as e:
        ComposeStore("127.0.0.1", port).start(timeout_s=0.5)
    assert str(e.value).startswith(f"--backend compose: the stack's store at 127.0.0.1:{port} does not answer")
    assert str(e.value).endswith(UP_HINT)


def _cfg(**kw):
    base = dict(backend="embedded", store_url=None, store_bin=default_store_bin(), store_port=None,
                store_host="127.0.0.1", store_db=0, store_image=None, run_id="r1")
    return SimpleNamespace(**{**base, **kw})


def test_store_for_picks_the_kind_the_configuration_asks_for(tmp_path):
    log = tmp_path / "store.log"
    assert type(store_for(_cfg(), tmp_path, log)) is EmbeddedStore
    assert type(store_for(_cfg(store_url="redis://127.0.0.1:7000/0", store_port=7000), tmp_path, log)) is ExternalStore
    assert type(store_for(_cfg(backend="compose", store_url="redis://127.0.0.1:16379/0", store_port=16379),
                          tmp_path, log)) is ComposeStore
    docker = store_for(_cfg(backend="docker", store_image="img"), tmp_path, log, tmp_path / "faketime" / "store")
    assert type(docker) is DockerStore and docker.faketime_file == tmp_path / "faketime" / "store"
    assert docker.log_path == log
