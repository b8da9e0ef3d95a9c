"""Two leases whose release *writes* the key (docs/history.md, "Claims and their owners"): the
value a release writes is nobody's claim, so only removing a live claim of another attempt counts."""
import secrets

ACQUIRE_COUNTER = """
local v = redis.call('get', KEYS[1])
if v and v ~= '0' then return 0 end
redis.call('set', KEYS[1], '1', 'PX', ARGV[1])
return 1
"""


class CounterZero:
    """A lock kept as a counter: "1" held, "0" free. The release sets it back to "0" whatever it
    holds, so a release after the deadline frees another attempt's claim."""

    def __init__(self, client, key, ttl_ms):
        self.client, self.key, self.ttl_ms = client, key, ttl_ms

    def acquire(self) -> bool:
        return self.client.eval(ACQUIRE_COUNTER, 1, self.key, self.ttl_ms) == 1

    def release(self) -> bool:
        return bool(self.client.set(self.key, "0"))


class GetdelWriteback:
    """A fresh token; the release deletes with GETDEL and, when what it took was not its own,
    writes that value back (a fresh lease for it): the GETDEL has freed the other claim already."""

    def __init__(self, client, key, ttl_ms):
        self.client, self.key, self.ttl_ms = client, key, ttl_ms
        self.token = secrets.token_hex(16).encode()

    def acquire(self) -> bool:
        return bool(self.client.set(self.key, self.token, nx=True, px=self.ttl_ms))

    def release(self) -> bool:
        old = self.client.getdel(self.key)
        if old is not None and old != self.token:
            self.client.set(self.key, old, px=self.ttl_ms)
        return old == self.token
