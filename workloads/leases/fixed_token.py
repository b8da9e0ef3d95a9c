"""``fixed-token``: an atomic compare-and-delete, but the token is the host name and process id —
fixed per worker, a common mistake. Two claim loops in one process (``--slots 2``)
write the same token, so one loop's late release matches, and deletes, the other's claim."""
import os
import socket

from leasecheck.workloads.leases.scripts import COMPARE_AND_DELETE, registered


class FixedToken:
    def __init__(self, client, key: str, ttl_ms: int):
        self.client, self.key, self.ttl_ms = client, key, ttl_ms
        self.token = f"{socket.gethostname()}:{os.getpid()}"
        self._release = registered(client, COMPARE_AND_DELETE)

    def acquire(self) -> bool:
        return bool(self.client.set(self.key, self.token, nx=True, px=self.ttl_ms))

    def release(self) -> bool:
        return self._release(keys=[self.key], args=[self.token]) == 1
