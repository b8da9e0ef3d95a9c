"""``naive-del``: claim with ``SET NX PX``, release with ``DEL`` by key name.

The classic mistake: the delete forgets who wrote the key. If this claim reached
its deadline mid-job and another worker claimed the key, ``release`` frees *that* worker's
claim, and a third worker walks in.
"""
import secrets


class NaiveDel:
    def __init__(self, client, key: str, ttl_ms: int):
        self.client, self.key, self.ttl_ms = client, key, ttl_ms
        self.token = secrets.token_hex(16)

    def acquire(self) -> bool:
        return bool(self.client.set(self.key, self.token, nx=True, px=self.ttl_ms))

    def release(self) -> bool:
        return self.client.delete(self.key) == 1
