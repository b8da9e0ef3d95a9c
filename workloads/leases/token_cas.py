"""``token-cas``: the repair. A fresh, unguessable token per attempt, stored with the
claim, and a release that deletes only while the stored token still matches — the compare and
the delete in one server-side step. It makes the release safe; it does not stop two workers
overlapping once a deadline passes, and a release that deletes nothing returns False."""
import secrets

from leasecheck.workloads.leases.scripts import COMPARE_AND_DELETE, registered


class TokenCas:
    def __init__(self, client, key: str, ttl_ms: int):
        self.client, self.key, self.ttl_ms = client, key, ttl_ms
        self.token = secrets.token_hex(16)
        self._release = registered(client, COMPARE_AND_DELETE)

    def acquire(self) -> bool:
        return bool(self.client.set(self.key, self.token, nx=True, px=self.ttl_ms))

    def release(self) -> bool:
        return self._release(keys=[self.key], args=[self.token]) == 1
