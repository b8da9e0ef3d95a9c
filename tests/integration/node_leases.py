"""A lease over every Redlock master whose release deletes by key name (no token check): given
jobs that outlive the lease, a late release removes another attempt's claim on each master it
reaches — foreign releases on several nodes, for the independent checker to count per node."""
from leasecheck.workloads.leases.redlock import Redlock


class RedlockDel(Redlock):
    def release(self) -> bool:
        deleted = 0
        for client in self.clients:
            try:
                deleted += client.delete(self.key)
            except Exception:  # noqa: BLE001 - the key there expires on its own
                pass
        return deleted > 0
