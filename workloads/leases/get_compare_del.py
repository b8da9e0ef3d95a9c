"""``get-compare-del``: a fresh token, but the release reads, compares in the client, then
deletes — three steps with a gap between the read and the delete. If the claim expires and is
re-taken inside that gap, the delete frees the new holder's claim: a read, then a compare, then
a delete does not close the race."""
import secrets


class GetCompareDel:
    def __init__(self, client, key: str, ttl_ms: int):
        self.client, self.key, self.ttl_ms = client, key, ttl_ms
        self.token = secrets.token_hex(16).encode()

    def acquire(self) -> bool:
        return bool(self.client.set(self.key, self.token, nx=True, px=self.ttl_ms))

    def release(self) -> bool:
        if self.client.get(self.key) != self.token:
            return False
        return self.client.delete(self.key) == 1
