"""``redis-py-lock``: an adapter over ``redis.lock.Lock`` as a team would adopt it — a uuid
token per lock object, ``SET NX PX`` to acquire, a Lua compare-and-delete to release
(``LockNotOwnedError`` when the claim is no longer ours). No renewal (the library leaves
``extend`` to the caller)."""
from redis.exceptions import LockNotOwnedError


class RedisPyLock:
    def __init__(self, client, key: str, ttl_ms: int):
        self.lock = client.lock(key, timeout=ttl_ms / 1000.0, blocking=False)

    def acquire(self) -> bool:
        return bool(self.lock.acquire(blocking=False))

    def release(self) -> bool:
        try:
            self.lock.release()
        except LockNotOwnedError:
            return False
        return True
