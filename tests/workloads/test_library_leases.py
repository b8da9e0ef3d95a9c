"""The python-redis-lock and pottery-redlock adapters against a real redis-server: where their
claims live, how long, and that releasing a lost claim answers False (the library's "not held"
exception) and leaves the new holder's claim alone. Commands the libraries send — pottery's from
threads of its own pool — are numbered on the connection they go out on, as the audit shows."""
import shlex
import time

import pytest
import redis

from leasecheck.harness.record.audit import MonitorRecorder
from leasecheck.harness.record.connection import MARKER, SendTracker, make_client
from leasecheck.workloads.leases import load_lease

KEY = "leasecheck:test:job:0"
STORE_KEY = {"python-redis-lock": "lock:" + KEY, "pottery-redlock": "redlock:" + KEY}


@pytest.fixture
def client(store):
    c = make_client(SendTracker("w0.s0"), store.host, store.port)
    c.flushdb()
    yield c
    c.flushdb()


def _lose(client, store_key):
    """The claim expires in the store (its remaining lifetime cut to 20 ms, then waited out)."""
    assert client.pexpire(store_key, 20)
    time.sleep(0.1)
    assert not client.exists(store_key)


@pytest.mark.parametrize("name", ["python-redis-lock", "pottery-redlock"])
def test_claim_lives_under_the_library_key_for_the_ttl(client, name):
    cls = load_lease(name)
    first, second = cls(client, KEY, 2000), cls(client, KEY, 2000)
    assert first.acquire() is True
    assert second.acquire() is False
    assert not client.exists(KEY)
    assert 1900 < client.pttl(STORE_KEY[name]) <= 2000
    assert first.release() is True
    assert not client.exists(STORE_KEY[name])


@pytest.mark.parametrize("name", ["python-redis-lock", "pottery-redlock"])
def test_release_of_a_lost_claim_is_false_and_spares_the_new_holder(client, name):
    cls = load_lease(name)
    old = cls(client, KEY, 1000)
    assert old.acquire() is True
    _lose(client, STORE_KEY[name])
    assert old.release() is False           # found nothing: the key was absent
    new = cls(client, KEY, 1000)
    assert new.acquire() is True
    new_token = client.get(STORE_KEY[name])
    assert old.release() is False           # found someone else's claim
    assert client.get(STORE_KEY[name]) == new_token
    assert new.release() is True


def test_python_redis_lock_renew_extends_while_held_and_fails_once_lost(client):
    lease = load_lease("python-redis-lock-renew")(client, KEY, 2000)
    assert lease.acquire() is True
    client.pexpire(STORE_KEY["python-redis-lock"], 500)
    assert lease.renew() is True
    assert client.pttl(STORE_KEY["python-redis-lock"]) > 1500   # back to the full 2 s
    _lose(client, STORE_KEY["python-redis-lock"])
    assert lease.renew() is False


def test_python_redis_lock_refuses_a_ttl_in_fractions_of_a_second():
    cls = load_lease("python-redis-lock")
    cls.check_ttl(2000)
    with pytest.raises(ValueError, match=r"whole seconds.*--ttl 2s"):
        cls.check_ttl(1500)
    with pytest.raises(ValueError, match=r"--ttl 1s"):
        cls.check_ttl(500)   # the library would truncate this to 0: no expiry at all


def test_pottery_px_is_exactly_the_ttl(client):
    lease = load_lease("pottery-redlock")(client, KEY, 570)   # 0.57 * 1000 is 569.99...
    assert lease.acquire() is True
    assert 520 < client.pttl(STORE_KEY["pottery-redlock"]) <= 570
    assert lease.release() is True


def _after_marker(path, conn):
    """Command names the store ran from ``conn``'s address after its marker (script lines aside)."""
    out, addr = [], None
    for line in path.read_text().splitlines()[1:]:
        if line.startswith("#"):
            continue
        where, cmd = line.split(" ", 1)[1][1:].split("] ", 1)
        words = shlex.split(cmd)
        here = where.split(" ")[1]
        if words == ["ECHO", MARKER + conn]:
            addr = here
        elif addr is not None and here == addr:
            out.append(words[0].upper())
    return out


def test_pottery_pool_threads_send_numbered_commands_in_audit_order(store, tmp_path):
    rec = MonitorRecorder(store.host, store.port, tmp_path / "audit.log")
    rec.start()
    tracker = SendTracker("w5.s0")
    client = make_client(tracker, store.host, store.port)
    cls = load_lease("pottery-redlock")
    winner, loser = cls(client, KEY + ":pool", 1000), cls(client, KEY + ":pool", 1000)
    assert winner.acquire() is True
    assert loser.acquire() is False
    assert winner.release() is True
    sent = tracker.drain()
    assert rec.finish(redis.Redis(host=store.host, port=store.port))
    # pottery sends each command from a thread of its own pool; they all go out on this client's
    # audited connections, numbered, and each connection's numbers follow its audit lines.
    by_conn = {}
    for conn, seq, name, *_ in sent:      # a SET's entry ends with its reply
        assert seq is not None, (conn, name)
        by_conn.setdefault(conn, []).append((seq, name))
    # winner SET, loser SET + its clean-up EVALSHA, winner's release EVALSHA (SCRIPT LOAD first
    # if the store did not know the script yet)
    assert [n for c in by_conn.values() for _, n in c].count("SET") == 2
    for conn, cmds in by_conn.items():
        assert [s for s, _ in cmds] == list(range(len(cmds)))
        assert _after_marker(tmp_path / "audit.log", conn) == [n for _, n in cmds]
