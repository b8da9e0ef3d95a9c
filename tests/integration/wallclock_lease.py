"""A test lease whose token carries the worker's wall clock (time.time()), so the audit shows
what the worker's clock said when it claimed."""
import secrets
import time


class WallClockLease:
    def __init__(self, client, key, ttl_ms):
        self.client, self.key, self.ttl_ms = client, key, ttl_ms
        self.token = f"{time.time():.3f}:{secrets.token_hex(4)}"

    def acquire(self):
        return bool(self.client.set(self.key, self.token, nx=True, px=self.ttl_ms))

    def release(self):
        return self.client.eval("if redis.call('get',KEYS[1])==ARGV[1] then return "
                                "redis.call('del',KEYS[1]) end return 0", 1, self.key, self.token) == 1
