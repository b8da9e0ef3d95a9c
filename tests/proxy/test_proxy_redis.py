"""A real redis-server behind the proxy (the ``store`` fixture), driven with redis-py."""
from __future__ import annotations

import statistics
import time

import pytest
import redis
from redis.backoff import NoBackoff
from redis.retry import Retry


@pytest.fixture
def redis_proxy(tp, store):
    return tp.create(upstream=f"{store.host}:{store.port}", name="redis")


def client(proxy, timeout: float = 3) -> redis.Redis:
    """No retries: each fault must show as the error it causes."""
    host, port = proxy.listen.rsplit(":", 1)
    return redis.Redis(host=host, port=int(port), socket_timeout=timeout,
                       retry=Retry(NoBackoff(), 0))


def ping_ms(r: redis.Redis) -> float:
    t0 = time.perf_counter()
    assert r.ping()
    return (time.perf_counter() - t0) * 1000


def test_commands_pass_through(redis_proxy):
    r = client(redis_proxy)
    assert r.set("proxy:k", "v", nx=True, px=5000)
    assert r.get("proxy:k") == b"v"
    assert r.delete("proxy:k") == 1
    r.close()


def test_no_toxic_adds_little(redis_proxy, store):
    """A loose guard (CI machines vary); bench/proxy_latency.py measures it properly."""
    direct = redis.Redis(host=store.host, port=store.port)
    proxied = client(redis_proxy)
    for r in (direct, proxied):
        for _ in range(50):
            r.ping()
    d = statistics.median(ping_ms(direct) for _ in range(300))
    p = statistics.median(ping_ms(proxied) for _ in range(300))
    assert p - d < 1.0, (d, p)


def test_latency_on_redis(redis_proxy):
    r = client(redis_proxy)
    base = [ping_ms(r) for _ in range(5)]
    redis_proxy.add_toxic(type="latency", attributes={"latency": 100})
    slow = [ping_ms(r) for _ in range(5)]
    # the fastest faulted PING against the fastest unfaulted one on the same connection: every
    # one at least the toxic's 100 ms slower, the fastest within 10 % of it (a loaded machine
    # delays some round trips by tens of ms, never all five)
    assert 90 <= min(slow) - min(base) <= 110, (base, slow)
    r.close()


def test_partition_then_heal(redis_proxy):
    r = client(redis_proxy)
    assert r.ping()                   # a connection open before the partition
    redis_proxy.add_toxic(type="timeout", stream="upstream", attributes={"timeout": 0})
    r2 = client(redis_proxy, timeout=0.3)
    with pytest.raises(redis.TimeoutError):
        r2.ping()
    redis_proxy.destroy_toxic("timeout_upstream")
    # Removing the toxic closed the old connection (the close reaches the client shortly
    # after the API answered). The first command on it may fail; the next reconnects.
    try:
        r.ping()
    except redis.ConnectionError:
        pass
    assert r.ping() and r2.ping()
    r.close()
    r2.close()


def test_reset_peer_is_a_connection_error(redis_proxy):
    r = client(redis_proxy)
    assert r.ping()
    redis_proxy.add_toxic(type="reset_peer", stream="upstream", attributes={"timeout": 0})
    with pytest.raises(redis.ConnectionError):
        r.execute_command("PING")
    r.close()
