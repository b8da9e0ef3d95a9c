"""``redis-asyncio-lock``: redis-py's asyncio lock, ``redis.asyncio.lock.Lock``, as an asyncio
service (FastAPI, aiohttp) would adopt it — on its own ``redis.asyncio`` client built from the
slot's URL (``connect = "url"``), one client per URL and event loop as an application keeps one:
a uuid token per lock object, ``SET NX PX`` to acquire, a Lua compare-and-delete to release
(``LockNotOwnedError`` when the claim is no longer ours). No renewal (the library leaves
``extend`` to the caller). Runs as one task per slot on the worker's event loop."""
from __future__ import annotations

import asyncio

import redis.asyncio
from redis.exceptions import LockNotOwnedError

TIMEOUT_S = 5.0     # the client's socket timeouts, as a service would set them


class RedisAsyncioLock:
    connect = "url"
    _clients: dict[tuple[str, int], redis.asyncio.Redis] = {}

    def __init__(self, url: str, key: str, ttl_ms: int):
        self.lock = self.client(url).lock(key, timeout=ttl_ms / 1000.0, blocking=False)

    @classmethod
    def client(cls, url: str) -> redis.asyncio.Redis:
        """The one client of this URL on the running loop (a client belongs to one loop)."""
        where = (url, id(asyncio.get_running_loop()))
        if where not in cls._clients:
            cls._clients[where] = redis.asyncio.from_url(url, socket_timeout=TIMEOUT_S,
                                                         socket_connect_timeout=TIMEOUT_S)
        return cls._clients[where]

    async def acquire(self) -> bool:
        return bool(await self.lock.acquire(blocking=False))

    async def release(self) -> bool:
        try:
            await self.lock.release()
        except LockNotOwnedError:
            return False
        return True
