"""``token-cas-renew``: ``token-cas`` plus renewal. The claim loop calls ``renew`` every TTL/3
while the job runs; renewal is an atomic compare-and-extend, and when it fails the job stops
producing effects (the claim is gone, somebody else may hold it)."""
from leasecheck.workloads.leases.scripts import COMPARE_AND_PEXPIRE, registered
from leasecheck.workloads.leases.token_cas import TokenCas


class TokenCasRenew(TokenCas):
    def __init__(self, client, key: str, ttl_ms: int):
        super().__init__(client, key, ttl_ms)
        self._extend = registered(client, COMPARE_AND_PEXPIRE)

    def renew(self) -> bool:
        return self._extend(keys=[self.key], args=[self.token, self.ttl_ms]) == 1
