"""Leases written the ways teams write them, none of them ours: a claim under a key of the lease's
own making, an acquire in a MULTI/EXEC transaction, an acquire that claims nothing at all. The
checker must judge each on what the store really did."""
import secrets

from redis.exceptions import WatchError

COMPARE_AND_DELETE = """
if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end
return 0
"""


class _Base:
    def __init__(self, client, key, ttl_ms):
        self.client, self.key, self.ttl_ms = client, self.claim_key(key), ttl_ms
        self.token = secrets.token_hex(16)

    @staticmethod
    def claim_key(key):
        return key

    def release_by_name(self):
        return self.client.delete(self.key) == 1

    def release_if_mine(self):
        return self.client.eval(COMPARE_AND_DELETE, 1, self.key, self.token) == 1


class _Namespaced(_Base):
    """The claim lives under the application's own namespace, not the job key."""
    @staticmethod
    def claim_key(key):
        return "app-locks:" + key

    def acquire(self):
        return bool(self.client.set(self.key, self.token, nx=True, px=self.ttl_ms))


class NamespacedDel(_Namespaced):
    release = _Base.release_by_name


class NamespacedCas(_Namespaced):
    release = _Base.release_if_mine


class _Transaction(_Base):
    """SETNX then PEXPIRE in one MULTI/EXEC, guarded by WATCH: the transaction does not run when
    the key changed after the EXISTS check."""
    def acquire(self):
        with self.client.pipeline() as p:
            try:
                p.watch(self.key)
                if p.exists(self.key):
                    return False
                p.multi()
                p.setnx(self.key, self.token)
                p.pexpire(self.key, self.ttl_ms)
                won, _ = p.execute()
                return bool(won)
            except WatchError:
                return False


class TransactionDel(_Transaction):
    release = _Base.release_by_name


class TransactionCas(_Transaction):
    release = _Base.release_if_mine


class ClaimsNothing(_Base):
    """Reports every acquire as won without writing anything: a lease that does not talk to this
    store (a wrong URL, a mock left in) looks exactly like this from the outside."""
    def acquire(self):
        self.client.get(self.key)
        return True

    def release(self):
        return True


class TransactionRefused(_Base):
    """A transaction the store refuses as a whole: Redis 6.2 has no PEXPIRE ... NX, so the
    queued PEXPIRE is rejected and the EXEC aborts (EXECABORT); nothing queued ever runs."""
    def acquire(self):
        p = self.client.pipeline(transaction=True)
        p.setnx(self.key, self.token)
        p.pexpire(self.key, self.ttl_ms, nx=True)
        won, _ = p.execute()
        return bool(won)

    release = _Base.release_if_mine


class RaisingConstructor:
    """A lease whose constructor always raises: nothing is ever claimed (issue 23)."""

    def __init__(self, client, key, ttl_ms):
        raise RuntimeError("boom")

    def acquire(self) -> bool:
        return True

    def release(self) -> bool:
        return True
