"""Complete asynchronous leases on their own ``redis.asyncio`` client: run them with

    leasecheck run --lease examples/async_lease.py:AsyncTokenCas      # exits 0
    leasecheck run --lease examples/async_lease.py:AsyncNaiveDel      # exits 1: foreign releases

``connect = "url"``: one object is built per claim attempt with (url, key, ttl_ms), ``url`` the
slot's ``redis://127.0.0.1:<port>/<db>``. ``async def`` calls: every slot is a task on the
worker's one event loop (``--slots 8``: eight tasks sharing it). acquire() and release() return
booleans; renew() is optional; an exception means that call's outcome is unknown.
"""
import asyncio
import secrets

import redis.asyncio

RELEASE = """
if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end
return 0
"""
_clients = {}


def client_for(url):
    """One client per URL and event loop, as an application keeps one."""
    where = (url, id(asyncio.get_running_loop()))
    if where not in _clients:
        _clients[where] = redis.asyncio.from_url(url, socket_timeout=5, socket_connect_timeout=5)
    return _clients[where]


class AsyncTokenCas:
    connect = "url"

    def __init__(self, url, key, ttl_ms):
        self.r, self.key, self.ttl_ms = client_for(url), key, ttl_ms
        self.token = secrets.token_urlsafe(16)  # fresh and unguessable, per attempt

    async def acquire(self) -> bool:
        return bool(await self.r.set(self.key, self.token, nx=True, px=self.ttl_ms))

    async def release(self) -> bool:
        # True only when it deleted its own claim; False is the "lease too short" signal.
        return await self.r.eval(RELEASE, 1, self.key, self.token) == 1


class AsyncNaiveDel(AsyncTokenCas):
    """The classic mistake, asynchronous: the release deletes by key name, whoever holds it."""

    async def release(self) -> bool:
        return await self.r.delete(self.key) == 1
