"""A check-then-act release, as teams write it by hand: read the key, compare the token in the
client, then delete — with 2 ms of the client's own work between the compare and the delete (a
log line, a metric). If the claim expires and is re-taken inside that gap, the delete frees the
new holder's claim. `get-compare-del` with a wider gap; used by `bench/detection.py` as a plugin
lease:

    leasecheck run --lease bench/check_then_act.py:CheckThenAct
"""
import time

from leasecheck.workloads.leases.get_compare_del import GetCompareDel


class CheckThenAct(GetCompareDel):
    def release(self) -> bool:
        if self.client.get(self.key) != self.token:
            return False
        time.sleep(0.002)
        return self.client.delete(self.key) == 1
