"""Leases that build their own client, as a user would write them: run one with

    leasecheck run --lease examples/own_client.py:RedisPyOwnClient

A lease class that declares ``connect = "url"`` is built with ``(url, key, ttl_ms)``: ``url`` is
``redis://127.0.0.1:<its slot's port>/<db>``, a port the harness listens on for that slot alone,
forwarding to the store and recording every command on the way, so the checker attributes
whatever client library the lease uses. Two libraries here: redis-py, built by the lease itself,
and valkey-py (``pip install valkey``), a client the harness never hands out. Each comes with a
compare-and-delete release (safe: exits 0) and a plain ``DEL`` (the classic bug: exits 1 with a
foreign release and its witness).
"""
import secrets

import redis
import valkey

COMPARE_AND_DELETE = """
if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end
return 0
"""


class RedisPyOwnClient:
    """redis-py, from the URL; released by compare-and-delete."""
    connect = "url"

    def __init__(self, url, key, ttl_ms):
        self.client = redis.Redis.from_url(url)
        self.key, self.ttl_ms = key, ttl_ms
        self.token = secrets.token_urlsafe(16)   # fresh per attempt

    def acquire(self) -> bool:
        return bool(self.client.set(self.key, self.token, nx=True, px=self.ttl_ms))

    def release(self) -> bool:
        return self.client.eval(COMPARE_AND_DELETE, 1, self.key, self.token) == 1


class RedisPyOwnClientDel(RedisPyOwnClient):
    """The same, released by DEL of the key name: frees whoever holds the key now."""

    def release(self) -> bool:
        return self.client.delete(self.key) == 1


class ValkeyOwnClient:
    """valkey-py, from the URL; released by compare-and-delete."""
    connect = "url"

    def __init__(self, url, key, ttl_ms):
        self.client = valkey.Valkey.from_url(url)
        self.key, self.ttl_ms = key, ttl_ms
        self.token = secrets.token_urlsafe(16)

    def acquire(self) -> bool:
        return bool(self.client.set(self.key, self.token, nx=True, px=self.ttl_ms))

    def release(self) -> bool:
        return self.client.eval(COMPARE_AND_DELETE, 1, self.key, self.token) == 1


class ValkeyOwnClientDel(ValkeyOwnClient):
    """The same, released by DEL."""

    def release(self) -> bool:
        return self.client.delete(self.key) == 1


class ValkeyFromHandedClient:
    """No ``connect``: handed the harness's redis-py client, it configures a second library from
    that client's host and port (as an application configures its second library), which lead
    through the slot's port too."""

    def __init__(self, client, key, ttl_ms):
        kw = client.connection_pool.connection_kwargs
        self.client = valkey.Valkey(host=kw["host"], port=kw["port"], db=kw.get("db", 0))
        self.key, self.ttl_ms = key, ttl_ms
        self.token = secrets.token_urlsafe(16)

    def acquire(self) -> bool:
        return bool(self.client.set(self.key, self.token, nx=True, px=self.ttl_ms))

    def release(self) -> bool:
        return self.client.eval(COMPARE_AND_DELETE, 1, self.key, self.token) == 1
