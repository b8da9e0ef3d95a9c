"""The built-in ``redlock`` lease against three real redis-servers: a majority wins, a minority
loses and leaves nothing behind, an unreachable master counts as a no, release deletes on every
master; its commands are numbered on connections named after their node."""
import time

import pytest
import redis

from leasecheck.harness.record.connection import SendTracker, make_client
from leasecheck.harness.run.host import default_store_bin
from leasecheck.harness.stores.embedded import EmbeddedStore
from leasecheck.workloads.leases import load_lease

KEY = "leasecheck:test:job:0"
NAMES = ("node1", "node2", "node3")


@pytest.fixture(scope="module")
def stores(tmp_path_factory):
    started = []
    try:
        for name in NAMES:
            s = EmbeddedStore(default_store_bin(), tmp_path_factory.mktemp(name))
            started.append(s)
            s.start()
        yield started
    finally:
        for s in started:
            s.stop()


@pytest.fixture
def admins(stores):
    out = [redis.Redis(host=s.host, port=s.port, decode_responses=True) for s in stores]
    for a in out:
        a.flushdb()
    yield out
    for a in out:
        a.flushdb()


def _clients(stores, tracker, timeout=None):
    return [make_client(tracker, s.host, s.port, socket_timeout=timeout, retries=0 if timeout else None, node=n)
            for s, n in zip(stores, NAMES)]


def test_redlock_declares_every_node_and_wins_a_majority_then_releases_everywhere(stores, admins):
    cls = load_lease("redlock")
    assert cls.nodes == "all"
    tracker = SendTracker("w0.s0")
    lease = cls(_clients(stores, tracker), KEY, 2000)
    assert lease.acquire() is True
    assert 0 < lease.validity_ms <= 2000 - 22
    values = [a.get(KEY) for a in admins]
    assert values == [lease.token] * 3 and all(1900 < a.pttl(KEY) <= 2000 for a in admins)
    sent = tracker.drain()
    assert [(e[0].split("@")[1], e[2]) for e in sent] == [("node1", "SET"), ("node2", "SET"), ("node3", "SET")]
    assert lease.release() is True
    assert [a.exists(KEY) for a in admins] == [0, 0, 0]
    assert lease.release() is False                   # nothing of its own left anywhere


def test_a_minority_loses_and_takes_back_what_it_won(stores, admins):
    admins[0].set(KEY, "other", px=5000)
    admins[2].set(KEY, "other", px=5000)
    lease = load_lease("redlock")(_clients(stores, SendTracker("w1.s0")), KEY, 2000)
    assert lease.acquire() is False
    assert [a.get(KEY) for a in admins] == ["other", None, "other"]
    admins[2].delete(KEY)
    again = load_lease("redlock")(_clients(stores, SendTracker("w2.s0")), KEY, 2000)
    assert again.acquire() is True                    # node2 and node3: two of three
    assert [a.get(KEY) for a in admins] == ["other", again.token, again.token]
    assert again.token != lease.token                 # a fresh token per attempt


def test_an_unreachable_master_is_a_no_and_a_slow_acquire_has_no_validity_left(stores, admins):
    stores[1].pause()
    try:
        lease = load_lease("redlock")(_clients(stores, SendTracker("w3.s0"), timeout=0.2), KEY, 2000)
        assert lease.acquire() is True                # node1 and node3
        slow = load_lease("redlock")(_clients(stores, SendTracker("w4.s0"), timeout=0.2), KEY + "x", 150)
        assert slow.acquire() is False                # 0.2 s waiting on node2 > a 150 ms ttl
        assert slow.validity_ms is None
    finally:
        stores[1].resume()
    assert admins[0].get(KEY) == lease.token and admins[2].get(KEY) == lease.token
    assert [a.exists(KEY + "x") for a in admins] == [0, 0, 0]   # the losing attempt left nothing


def test_pottery_on_every_master_wins_a_majority_and_its_straggler_is_credited_to_its_acquire(stores, admins):
    """pottery returns once two of three masters said OK; node2 (stopped while the connection
    to it is being made) gets its SET only after the acquire returned: a late command of that
    acquire, not of the next call."""
    cls = load_lease("pottery-redlock-n")
    assert cls.nodes == "all"
    late = []
    tracker = SendTracker("w5.s0", on_late=lambda call, entry: late.append((call.f, call.invoked, entry)))
    lease = cls(_clients(stores, tracker, timeout=5), KEY, 3000)
    stores[1].pause()
    try:
        tracker.begin("w5.s0.0", "acquire", KEY, 1)
        assert lease.acquire() is True
        sent = tracker.drain()
    finally:
        stores[1].resume()
    assert sorted(e[0].split("@")[1] for e in sent) == ["node1", "node3"] and {e[2] for e in sent} == {"SET"}
    for _ in range(100):
        if late:
            break
        time.sleep(0.02)
    assert late == [("acquire", 1, [late[0][2][0], 0, "SET"])] and late[0][2][0].endswith("@node2")
    for _ in range(100):
        if admins[1].exists("redlock:" + KEY):
            break
        time.sleep(0.02)
    token = admins[0].get("redlock:" + KEY)
    assert token and [a.get("redlock:" + KEY) for a in admins] == [token] * 3
    tracker.begin("w5.s0.0", "release", KEY, 2)
    assert lease.release() is True
    for _ in range(100):                      # a delete still in flight when release returned is late
        if not any(a.exists("redlock:" + KEY) for a in admins):
            break
        time.sleep(0.02)
    assert [a.exists("redlock:" + KEY) for a in admins] == [0, 0, 0]
    assert all(f == "release" and invoked == 2 for f, invoked, _ in late[1:])
