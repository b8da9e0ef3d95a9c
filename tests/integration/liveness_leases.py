"""Test leases for the liveness properties: one that claims with no expiry at all, and one whose
failed acquire "helpfully" refreshes the key's expiry (keeping whoever holds it alive)."""
import secrets

RELEASE = "if redis.call('get',KEYS[1])==ARGV[1] then return redis.call('del',KEYS[1]) end return 0"


class NoExpiry:
    """SET key token NX — no PX: the claim lives until its holder releases it."""

    def __init__(self, client, key, ttl_ms):
        self.client, self.key, self.ttl_ms = client, key, ttl_ms
        self.token = secrets.token_hex(8)

    def acquire(self):
        return bool(self.client.set(self.key, self.token, nx=True))

    def release(self):
        return self.client.eval(RELEASE, 1, self.key, self.token) == 1


class RefreshesOnLoss(NoExpiry):
    """SET NX PX, and on a lost acquire a PEXPIRE of the key: the holder's claim kept alive by
    every contender."""

    def acquire(self):
        if self.client.set(self.key, self.token, nx=True, px=self.ttl_ms):
            return True
        self.client.pexpire(self.key, self.ttl_ms)
        return False
