"""The ``token-cas`` lease on the wire path, for ``bench/throughput.py --wire``: the built-in
lease unchanged, on a redis-py client it builds from its slot's URL (``connect = "url"``)
instead of the client the harness hands it — the same commands, through the slot's port.

``TokenCasUrl`` keeps one client per slot (per URL: each slot has its own) across its attempts,
as an application keeps its client, so it measures the forwarding; ``TokenCasUrlPerAttempt``
builds a new client for every attempt, so each attempt also opens a connection (its handshake,
the marker, ``SCRIPT LOAD``)."""
import threading

import redis

from leasecheck.workloads.leases.token_cas import TokenCas

_CLIENTS: dict[str, redis.Redis] = {}
_LOCK = threading.Lock()


class TokenCasUrl(TokenCas):
    connect = "url"

    def __init__(self, url, key, ttl_ms):
        with _LOCK:
            client = _CLIENTS.get(url) or _CLIENTS.setdefault(url, redis.Redis.from_url(url))
        super().__init__(client, key, ttl_ms)


class TokenCasUrlPerAttempt(TokenCas):
    connect = "url"

    def __init__(self, url, key, ttl_ms):
        super().__init__(redis.Redis.from_url(url), key, ttl_ms)
