"""The ``token-cas`` lease on the wire path, for ``bench/throughput.py --wire``: the built-in
lease unchanged, on a redis-py client it builds from its slot's URL (``connect = "url"``)
instead of the client the harness hands it — the same commands, through the slot's port."""
import redis

from leasecheck.workloads.leases.token_cas import TokenCas


class TokenCasUrl(TokenCas):
    connect = "url"

    def __init__(self, url, key, ttl_ms):
        super().__init__(redis.Redis.from_url(url), key, ttl_ms)
