"""An asynchronous test lease (``connect = "url"``) whose first slot's acquire never returns — an
await that never completes — while the worker's other slots, tasks on the same loop, keep
claiming: the hung call ``--call-timeout`` must catch, its stack the task's, ending on the await
below."""
import asyncio
import secrets

import redis.asyncio


class HangsInAnAwait:
    connect = "url"

    def __init__(self, url, key, ttl_ms):
        self.url, self.key, self.ttl_ms = url, key, ttl_ms
        self.token = secrets.token_hex(8)

    async def acquire(self):
        if asyncio.current_task().get_name().endswith(".s0"):
            await asyncio.Event().wait()  # hung-here: never set
        r = redis.asyncio.from_url(self.url)
        try:
            return bool(await r.set(self.key, self.token, nx=True, px=self.ttl_ms))
        finally:
            await r.aclose()

    async def release(self):
        r = redis.asyncio.from_url(self.url)
        try:
            return await r.eval("if redis.call('get',KEYS[1])==ARGV[1] then return "
                                "redis.call('del',KEYS[1]) end return 0", 1, self.key, self.token) == 1
        finally:
            await r.aclose()
