"""The Node.js example leases (examples/node) through the exec: protocol against a real store,
without a run: what each call sends and answers, and that a store it cannot reach is a
``ConnectionError`` reply (the store's path failing, as the checker counts it), not a lost claim.
Needs ``npm ci`` in examples/node (``.ci/run`` does it)."""
import socket
import time

import pytest
import redis

from leasecheck.workloads.leases import load_lease
from leasecheck.workloads.leases.exec_lease import LeaseError

KEY = "leasecheck:test:node:job:0"


@pytest.fixture
def r(store):
    c = redis.Redis(host=store.host, port=store.port)
    c.flushdb()
    yield c
    c.flushdb()


@pytest.fixture
def url(store):
    return f"redis://{store.host}:{store.port}/0"


def slot(name):
    return load_lease(name).for_slot("w0.s0")


def test_the_del_example_claims_with_set_nx_px_and_deletes_by_name(r, url):
    leases = slot("node-ioredis-del")
    try:
        first = leases(url, KEY, 2000)
        assert first.acquire() is True
        assert 1900 < r.pttl(KEY) <= 2000
        assert first.renew is None                          # it said it cannot renew
        assert leases(url, KEY, 2000).acquire() is False
        r.set(KEY, "someone else's", px=2000)               # its claim lost and taken by another
        assert first.release() is True                      # the plain DEL frees theirs: the bug
        assert not r.exists(KEY)
    finally:
        leases.close()


def test_the_redlock_example_renews_and_releases_only_its_own_claim(r, url):
    leases = slot("node-redlock")
    try:
        first = leases(url, KEY, 1000)
        assert first.acquire() is True
        token = r.get(KEY)
        assert first.renew is not None
        r.pexpire(KEY, 300)
        assert first.renew() is True and r.pttl(KEY) > 900  # extended to the full TTL again
        assert leases(url, KEY, 1000).acquire() is False
        r.set(KEY, "someone else's", px=2000)
        assert first.release() is False                      # found nothing of its own
        assert r.get(KEY) == b"someone else's"               # and left theirs alone
        r.delete(KEY)
        second = leases(url, KEY, 1000)
        assert second.acquire() is True and r.get(KEY) != token
        assert second.release() is True and not r.exists(KEY)
    finally:
        leases.close()


@pytest.mark.parametrize("name", ["node-ioredis-del", "node-redlock"])
def test_a_store_it_cannot_reach_is_a_connection_error_not_a_lost_claim(name):
    with socket.socket() as s:                 # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    leases = slot(name)
    try:
        t = time.monotonic()
        with pytest.raises(LeaseError) as e:
            leases(f"redis://127.0.0.1:{port}/0", KEY, 1000).acquire()
        assert type(e.value).__name__ == "ConnectionError", e.value
        assert time.monotonic() - t < 30
    finally:
        leases.close()
