"""Audited connections: the marker, the numbering, and numbering across a reconnect, checked
against the store's real MONITOR output."""
import socket
import time

import pytest

from leasecheck.harness.record.audit import MonitorRecorder
from leasecheck.harness.record.connection import MARKER, SendTracker, make_client


@pytest.fixture
def audit(store, tmp_path):
    rec = MonitorRecorder(store.host, store.port, tmp_path / "audit.log")
    rec.start()
    yield rec, tmp_path / "audit.log"
    rec.close()


def _lines_by_addr(path):
    import shlex

    out = {}
    for line in path.read_text().splitlines()[1:]:
        if line.startswith("#"):
            continue
        stamp, rest = line.split(" ", 1)
        addr, cmd = rest[1:].split("] ", 1)
        out.setdefault(addr.split(" ")[1], []).append(shlex.split(cmd))
    return out


def _finish(rec, store):
    import redis

    assert rec.finish(redis.Redis(host=store.host, port=store.port))


def test_commands_are_numbered_after_the_marker(store, audit):
    rec, path = audit
    tracker = SendTracker("w0.s0")
    client = make_client(tracker, store.host, store.port)
    client.set("k1", "a", nx=True, px=5000)
    client.execute_command("CLIENT", "INFO")  # hidden from MONITOR: takes no number
    client.get("k1")
    with pytest.raises(Exception):
        client.execute_command("NOSUCHCOMMAND")  # refused before running: takes no number
    client.delete("k1")
    sent = tracker.drain()
    assert [e[2] for e in sent] == ["SET", "CLIENT", "GET", "NOSUCHCOMMAND", "DEL"]
    assert [e[1] for e in sent] == [0, None, 1, None, 2]
    assert {e[0] for e in sent} == {"w0.s0.c0"}
    _finish(rec, store)
    lines = next(v for v in _lines_by_addr(path).values() if ["ECHO", MARKER + "w0.s0.c0"] in v)
    after = lines[lines.index(["ECHO", MARKER + "w0.s0.c0"]) + 1:]
    assert [a[0].upper() for a in after] == ["SET", "GET", "DEL"]


def test_reconnect_gets_a_new_conn_and_restarts_numbering(store, audit):
    rec, path = audit
    tracker = SendTracker("w1.s0")
    client = make_client(tracker, store.host, store.port)
    client.get("x")
    conn = client.connection_pool.get_connection()
    conn.disconnect()
    client.connection_pool.release(conn)
    client.get("x")
    sent = tracker.drain()
    assert sent == [["w1.s0.c0", 0, "GET"], ["w1.s0.c1", 0, "GET"]]
    _finish(rec, store)
    markers = [v for v in _lines_by_addr(path).values()
               if any(a[:1] == ["ECHO"] and a[1].startswith(MARKER + "w1.s0") for a in v)]
    assert len(markers) == 2  # two connections, two addresses, each announced


def test_monitor_recorder_marks_end_only_when_drained(store, tmp_path):
    rec = MonitorRecorder(store.host, store.port, tmp_path / "a.log")
    rec.start()
    tracker = SendTracker("w2.s0")
    client = make_client(tracker, store.host, store.port)
    for i in range(2000):
        client.set(f"bulk:{i}", "v")
    _finish(rec, store)
    text = (tmp_path / "a.log").read_text()
    assert text.endswith("# end\n")
    assert sum(1 for line in text.splitlines() if '"SET" "bulk:' in line) == 2000


def test_a_planned_store_restart_is_recorded_without_a_gap(tmp_path):
    import redis

    from leasecheck.harness.run.host import default_store_bin
    from leasecheck.harness.stores.embedded import EmbeddedStore

    store = EmbeddedStore(default_store_bin(), tmp_path)
    store.start()
    try:
        rec = MonitorRecorder(store.host, store.port, tmp_path / "a.log")
        rec.start()
        admin = redis.Redis(host=store.host, port=store.port)
        admin.set("before", "1")
        assert rec.drain(admin)
        rec.expect_restart("store killed by the harness")
        store.kill()
        store.restart()
        rec.resume()
        admin = redis.Redis(host=store.host, port=store.port)
        assert admin.get("before") is None          # volatile: it came back empty
        admin.set("after", "1")
        assert rec.finish(admin)
    finally:
        store.stop()
    lines = (tmp_path / "a.log").read_text().splitlines()
    i = lines.index("# restart store killed by the harness")
    assert any('"SET" "before"' in l for l in lines[:i]) and any('"SET" "after"' in l for l in lines[i:])
    assert lines[-1] == "# end" and not any(l.startswith("# gap") for l in lines)


def test_a_command_refused_for_memory_takes_no_number(store, audit):
    rec, path = audit
    import redis as _redis

    admin = _redis.Redis(host=store.host, port=store.port)
    tracker = SendTracker("w3.s0")
    client = make_client(tracker, store.host, store.port)
    client.get("warm")  # connect (and announce) before memory is squeezed
    admin.config_set("maxmemory", "1")
    try:
        with pytest.raises(_redis.exceptions.OutOfMemoryError):
            client.set("oom", "x")
    finally:
        admin.config_set("maxmemory", "0")
    client.set("fine", "y")
    assert [e[1:] for e in tracker.drain()] == [[0, "GET"], [None, "SET"], [1, "SET", 1]]  # a SET that wrote: its reply, 1


def test_pipelines_and_transactions_are_numbered_as_the_store_lists_them(store, audit):
    """A refused command in a plain pipeline takes no number; in a transaction every command
    keeps its number (the checker knows which ones an aborted EXEC never ran), and the EXEC that
    aborted is listed by the store, so it keeps its number too."""
    rec, path = audit
    tracker = SendTracker("w1.s0")
    client = make_client(tracker, store.host, store.port)
    p = client.pipeline(transaction=False)
    p.set("p1", "a")
    p.execute_command("PEXPIRE", "p1")            # wrong number of arguments: refused
    p.get("p1")
    p.execute(raise_on_error=False)
    t = client.pipeline(transaction=True)
    t.setnx("p2", "a")
    t.execute_command("PEXPIRE", "p2")            # refused while queued: the EXEC aborts
    with pytest.raises(Exception):
        t.execute()
    client.delete("p1")
    sent = tracker.drain()
    numbered = [(e[2], e[1]) for e in sent]
    assert numbered == [("SET", 0), ("PEXPIRE", None), ("GET", 1),
                        ("MULTI", 2), ("SETNX", 3), ("PEXPIRE", 4), ("EXEC", 5), ("DEL", 6)]
    _finish(rec, store)
    lines = next(v for v in _lines_by_addr(path).values() if ["ECHO", MARKER + "w1.s0.c0"] in v)
    after = lines[lines.index(["ECHO", MARKER + "w1.s0.c0"]) + 1:]
    assert [a[0].upper() for a in after] == ["SET", "GET", "MULTI", "EXEC", "DEL"]


def test_a_conditional_create_records_whether_it_wrote(store):
    """A SET/SETNX entry gets the reply as a 4th element: 1 written, 0 not (also in a pipeline,
    each its own); a SET ... GET (its reply is the old value) and a timed-out SET keep three."""
    import redis

    tracker = SendTracker("w2.s0")
    client = make_client(tracker, store.host, store.port)
    client.delete("r1", "r2", "r3")
    tracker.drain()
    assert client.set("r1", "a", nx=True, px=5000) is True
    assert client.set("r1", "b", nx=True, px=5000) is None
    assert client.setnx("r2", "a") is True
    assert client.setnx("r2", "b") is False
    client.set("r3", "a", get=True)
    p = client.pipeline(transaction=False)
    p.set("r1", "c", nx=True, px=5000)
    p.get("r1")
    p.set("r4", "c", nx=True, px=5000)
    p.execute()
    sent = tracker.drain()
    assert [e[2:] for e in sent] == [["SET", 1], ["SET", 0], ["SETNX", 1], ["SETNX", 0], ["SET"],
                                     ["SET", 0], ["GET"], ["SET", 1]]

    slow = make_client(tracker, store.host, store.port, socket_timeout=0.2, retries=0)
    slow.get("r1")
    tracker.drain()
    admin = redis.Redis(host=store.host, port=store.port)
    import threading
    sleeper = threading.Thread(target=admin.execute_command, args=("DEBUG", "SLEEP", "0.6"))
    sleeper.start()
    time.sleep(0.05)
    try:
        with pytest.raises(redis.exceptions.TimeoutError):
            slow.set("r5", "a", nx=True, px=5000)
    finally:
        sleeper.join()
    assert [e[2:] for e in tracker.drain()] == [["SET"]]
    client.delete("r1", "r2", "r3", "r4", "r5")


def test_the_numbering_is_set_on_the_connection_itself(store):
    """redis-py's calls of ``send_command`` and ``read_response`` reach the numbering directly: the
    connection holds them (no method of the audited class runs), each around redis-py's own."""
    from redis.connection import Connection

    from leasecheck.harness.record.numbering import Reader, Sender

    client = make_client(SendTracker("w4.s0"), store.host, store.port)
    client.get("x")
    conn = client.connection_pool.get_connection()
    try:
        assert type(vars(conn)["send_command"]) is Sender and type(vars(conn)["read_response"]) is Reader
        assert conn.send_command.send.__func__ is Connection.send_command
        assert conn.read_response.read.__func__ is Connection.read_response
    finally:
        client.connection_pool.release(conn)


def test_a_class_before_the_audited_one_keeps_its_place_around_the_numbering(store):
    """A connection class that overrides ``read_response`` ahead of the audited one (as the
    Sentinel's turns a READONLY refusal into a disconnect and a ``ConnectionError``) still runs
    around the numbering: the refusal reaches the numbering as the store's error first, so the
    refused command gives its number back, and only then becomes the outer class's error."""
    import redis as _redis
    from redis.connection import Connection

    from leasecheck.harness.record.connection import AuditedConnection

    class Converting(Connection):
        def read_response(self, *args, **kwargs):
            try:
                return super().read_response(*args, **kwargs)
            except _redis.exceptions.OutOfMemoryError as e:
                self.disconnect()
                raise _redis.exceptions.ConnectionError("converted") from e

    tracker = SendTracker("w5.s0")
    client = make_client(tracker, store.host, store.port)
    cls = client.connection_pool.connection_class
    client.connection_pool.connection_class = type("Ordered", (Converting, cls), {})
    assert issubclass(client.connection_pool.connection_class, AuditedConnection)
    admin = _redis.Redis(host=store.host, port=store.port)
    client.get("warm")
    conn = client.connection_pool.get_connection()
    try:
        assert "read_response" not in vars(conn) and "send_command" in vars(conn)
        admin.config_set("maxmemory", "1")
        conn.send_command("SET", "oom", "x")
        with pytest.raises(_redis.exceptions.ConnectionError, match="converted"):
            conn.read_response()
    finally:
        admin.config_set("maxmemory", "0")
        client.connection_pool.release(conn)
    assert [e[1:] for e in tracker.drain()] == [[0, "GET"], [None, "SET"]]


def test_a_set_with_get_is_told_in_any_case_from_a_tuple_or_a_list():
    from leasecheck.harness.record.numbering import _has_get

    for args in (("SET", "k", "v", "GET"), ("SET", "k", "v", "NX", "get"), ("SET", b"k", b"v", b"Get"),
                 ["SET", "k", "v", "PX", 10, "GET"], ["set", "k", "v", b"GET"]):
        assert _has_get(args), args
    for args in (("SET", "k", "GET"), ("SET", "k", "v", "NX", "PX", 1000), ["SET", "k", "v", "NX", "GETX"],
                 ("SET", "k", "v", 123)):
        assert not _has_get(args), args
