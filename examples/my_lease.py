"""A complete lease plugin: run it with

    leasecheck run --lease examples/my_lease.py:MyLease

One object is built per claim attempt with (client, key, ttl_ms); ``client`` is a redis-py
client. acquire() and release() return booleans; renew() is optional. An exception from any of
them means that call's outcome is unknown, and the checker treats it so.
"""
import secrets

RELEASE = """
if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end
return 0
"""


class MyLease:
    def __init__(self, client, key, ttl_ms):
        self.client, self.key, self.ttl_ms = client, key, ttl_ms
        self.token = secrets.token_urlsafe(16)  # fresh and unguessable, per attempt

    def acquire(self) -> bool:
        return bool(self.client.set(self.key, self.token, nx=True, px=self.ttl_ms))

    def release(self) -> bool:
        # True only when it deleted its own claim; False is the "lease too short" signal.
        return self.client.eval(RELEASE, 1, self.key, self.token) == 1
