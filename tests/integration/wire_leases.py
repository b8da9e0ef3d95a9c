"""Test leases that bring their own client (``connect = "url"``): the wire path's cases.

- ``TokenCasUrl`` / ``NaiveDelUrl``: the built-in ``token-cas`` and ``naive-del`` unchanged, on a
  redis-py client they build from their URL — the same lease on both paths.
- ``ReconnectingUrl``: a new connection for every command (client ports are reused in the run).
- ``TransactionUrl``: ``SET NX PX`` + ``PTTL`` in a ``MULTI``/``EXEC`` transaction, released by
  ``WATCH``/``GET``/``MULTI``/``DEL``/``EXEC``, with a pipelined ``PING`` + ``PTTL`` after the
  acquire: pipelines and transactions cut into commands on the wire.
"""
import secrets

import redis

from leasecheck.workloads.leases.naive_del import NaiveDel
from leasecheck.workloads.leases.token_cas import TokenCas


class TokenCasUrl(TokenCas):
    connect = "url"

    def __init__(self, url, key, ttl_ms):
        super().__init__(redis.Redis.from_url(url), key, ttl_ms)


class NaiveDelUrl(NaiveDel):
    connect = "url"

    def __init__(self, url, key, ttl_ms):
        super().__init__(redis.Redis.from_url(url), key, ttl_ms)


class ReconnectingUrl:
    connect = "url"

    def __init__(self, url, key, ttl_ms):
        self.client, self.key, self.ttl_ms = redis.Redis.from_url(url), key, ttl_ms
        self.token = secrets.token_hex(8)

    def _fresh(self, result):
        self.client.connection_pool.disconnect()
        return result

    def acquire(self):
        return self._fresh(bool(self.client.set(self.key, self.token, nx=True, px=self.ttl_ms)))

    def release(self):
        ok = self.client.eval("if redis.call('get',KEYS[1])==ARGV[1] then return "
                              "redis.call('del',KEYS[1]) end return 0", 1, self.key, self.token) == 1
        return self._fresh(ok)


class TransactionUrl:
    connect = "url"

    def __init__(self, url, key, ttl_ms):
        self.client, self.key, self.ttl_ms = redis.Redis.from_url(url), key, ttl_ms
        self.token = secrets.token_hex(8)

    def acquire(self):
        pipe = self.client.pipeline(transaction=True)
        pipe.set(self.key, self.token, nx=True, px=self.ttl_ms)
        pipe.pttl(self.key)
        won, _ = pipe.execute()
        if not won:
            return False
        plain = self.client.pipeline(transaction=False)
        plain.ping()
        plain.pttl(self.key)
        plain.execute()
        return True

    def release(self):
        with self.client.pipeline(transaction=True) as pipe:
            try:
                pipe.watch(self.key)
                if pipe.get(self.key) != self.token.encode():
                    pipe.unwatch()
                    return False
                pipe.multi()
                pipe.delete(self.key)
                return pipe.execute()[0] == 1
            except redis.WatchError:
                return False
