"""The wire path: numbering a client's commands as it forwards them, checked against the
store's real MONITOR output, and the bookkeeping of one connection (``Link``) on its own."""
import shlex

import pytest
import redis
import valkey

from leasecheck.harness.record.audit import MonitorRecorder
from leasecheck.harness.record.connection import SendTracker
from leasecheck.harness.record.wire import Link, Wire
from leasecheck.harness.run.slot_url import slot_url
from leasecheck.protocol import CONN_MARKER


def _args(*words):
    return [w.encode() for w in words]


def test_the_handshake_goes_before_the_marker_unnumbered():
    t = SendTracker("w0.s0")
    link = Link(t)
    assert link.request(_args("HELLO", "3"), b"hello") == b"hello"
    assert link.request(_args("CLIENT", "SETINFO", "LIB-NAME", "x"), b"client") == b"client"
    out = link.request(_args("SET", "k", "v", "NX"), b"set")
    assert out.startswith(b"*2\r\n$4\r\nECHO\r\n") and (CONN_MARKER + "w0.s0.c0").encode() in out
    assert out.endswith(b"set")
    assert link.request(_args("CLIENT", "ID"), b"id") == b"id"
    assert t.drain() == [["w0.s0.c0", 0, "SET"], ["w0.s0.c0", None, "CLIENT"]]
    # the replies: HELLO's and CLIENT's go to the client, the marker's does not, SET's is read
    assert [link.reply(r) for r in (b"%0\r\n", b"+OK\r\n", b"$15\r\nleasecheck:conn\r\n", b"+OK\r\n", b":7\r\n")] \
        == [True, True, False, True, True]


def test_a_refused_command_gives_up_its_number_and_a_create_keeps_its_reply():
    t = SendTracker("w0.s0")
    link = Link(t)
    for words in (("SET", "k", "v", "NX"), ("NOSUCH",), ("GET", "k"), ("SET", "k", "w", "GET")):
        link.request(_args(*words), b"")
    entries = t.drain()
    link.reply(b"+ECHO\r\n")                 # the marker's
    link.reply(b"$-1\r\n")
    link.reply(b"-ERR unknown command 'NOSUCH'\r\n")
    link.reply(b"$1\r\nv\r\n")
    link.reply(b"+OK\r\n")
    assert entries == [["w0.s0.c0", 0, "SET", 0], ["w0.s0.c0", None, "NOSUCH"], ["w0.s0.c0", 1, "GET"],
                       ["w0.s0.c0", 2, "SET"]]    # SET ... GET replies with the old value
    assert link.seq == 3


def test_inside_a_transaction_a_refusal_renumbers_nothing():
    t = SendTracker("w0.s0")
    link = Link(t)
    for words in (("MULTI",), ("NOSUCH",), ("SET", "k", "v"), ("EXEC",)):
        link.request(_args(*words), b"")
    entries = t.drain()
    for r in (b"+ECHO\r\n", b"+OK\r\n", b"-ERR unknown command 'NOSUCH'\r\n", b"+QUEUED\r\n",
              b"-EXECABORT Transaction discarded\r\n"):
        link.reply(r)
    assert [e[1] for e in entries] == [0, 1, 2, 3] and all(len(e) == 3 for e in entries)


@pytest.fixture
def audit(store, tmp_path):
    rec = MonitorRecorder(store.host, store.port, tmp_path / "audit.log")
    rec.start()
    yield rec, tmp_path / "audit.log"
    rec.close()


def _lines_by_addr(path):
    out = {}
    for line in path.read_text().splitlines()[1:]:
        if line.startswith("#"):
            continue
        _, rest = line.split(" ", 1)
        addr, cmd = rest[1:].split("] ", 1)
        out.setdefault(addr.split(" ")[1], []).append(shlex.split(cmd))
    return out


@pytest.mark.parametrize("library", [redis.Redis, valkey.Valkey])
def test_commands_of_any_client_library_are_numbered_as_the_store_lists_them(store, audit, library):
    rec, path = audit
    t = SendTracker("w0.s0")
    wire = Wire(store.host, store.port)
    port = wire.listen(t)
    wire.start()
    try:
        client = library.from_url(slot_url(port))
        assert client.set("wk", "v", nx=True, px=5000) is True
        pipe = client.pipeline(transaction=True)
        pipe.get("wk")
        pipe.pexpire("wk", 4000)
        assert pipe.execute() == [b"v", True]
        with pytest.raises(Exception):
            client.execute_command("NOSUCHCOMMAND")
        assert client.delete("wk") == 1
        client.connection_pool.disconnect()
        client.ping()                      # a new connection: only a handshake-named command
        assert client.echo("x") == b"x"
        sent = t.drain()
    finally:
        wire.close()
    assert rec.finish(redis.Redis(host=store.host, port=store.port))
    by_addr = _lines_by_addr(path)
    for conn in {e[0] for e in sent}:
        addr = next(a for a, lines in by_addr.items() if ["ECHO", CONN_MARKER + conn] in lines)
        lines = by_addr[addr]
        after = lines[lines.index(["ECHO", CONN_MARKER + conn]) + 1:]
        numbered = [e for e in sent if e[0] == conn and e[1] is not None]
        assert [e[1] for e in numbered] == list(range(len(numbered)))
        assert [line[0].upper() for line in after] == [e[2] for e in numbered], (after, numbered)
    assert sent[0][:3] == ["w0.s0.c0", 0, "SET"] and sent[0][3] == 1
    assert ["w0.s0.c0", None, "NOSUCHCOMMAND"] in sent


def test_slot_url():
    assert slot_url(6400) == "redis://127.0.0.1:6400/0"
    assert slot_url(6400, 3) == "redis://127.0.0.1:6400/3"
    for bad in (0, 70000, "6400", True):
        with pytest.raises(ValueError):
            slot_url(bad)
