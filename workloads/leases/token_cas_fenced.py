"""``token-cas-fenced``: ``token-cas`` whose claim also hands out a fencing token — a counter
incremented in the same server-side step as the conditional create, so a later claim of the key
always carries a larger number. The job presents it where its effect lands (``--sink``), and a
sink that remembers the largest fence it accepted turns away a holder whose claim was taken over:
where overlapping runs do harm, the guard belongs where the job's effects are made durable."""
from leasecheck.workloads.leases.token_cas import TokenCas

CLAIM_WITH_FENCE = """
if redis.call('set', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
  return redis.call('incr', KEYS[2])
end
return false
"""


def fence_key(key: str) -> str:
    return "fence:{" + key + "}"


class TokenCasFenced(TokenCas):
    def __init__(self, client, key: str, ttl_ms: int):
        super().__init__(client, key, ttl_ms)
        self._claim = client.register_script(CLAIM_WITH_FENCE)
        self.fence: int | None = None

    def acquire(self) -> bool:
        fence = self._claim(keys=[self.key, fence_key(self.key)], args=[self.token, self.ttl_ms])
        self.fence = int(fence) if fence is not None else None
        return self.fence is not None
