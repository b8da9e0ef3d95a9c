"""Helpers of the pause tests: two stand-in worker processes, a fault context over a holder table,
and a wait for a process to show state T."""
import random
import subprocess
import time
from types import SimpleNamespace

import pytest

from leasecheck.harness.faults.base import FaultContext
from leasecheck.harness.nemesis.heal import Ledger
from leasecheck.harness.run.procfs import is_stopped


@pytest.fixture
def workers():
    """Two ``sleep 30`` processes standing in for workers w0 and w1, killed by PID afterwards."""
    procs = [subprocess.Popen(["sleep", "30"]) for _ in range(2)]
    yield procs
    for p in procs:
        p.kill()
        p.wait()


def fault_ctx(tmp_path, table, workers) -> FaultContext:
    return FaultContext(cfg=SimpleNamespace(ttl_s=1.0), run_dir=tmp_path, ledger=Ledger(tmp_path), workers=workers,
                        holders=table, rng=random.Random(1))


def stopped_within(pid, seconds) -> bool:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if is_stopped(pid):
            return True
        time.sleep(0.005)
    return False
