"""Preflight refuses a run that does not fit on this machine — memory, processes and threads,
open files, disk — in one line with the numbers and the fix, and lets the default run through."""
from __future__ import annotations

import resource

import pytest
from tests.conftest import refused_by_preflight

from leasecheck.harness.run import limits
from leasecheck.harness.run.preflight import preflight
from leasecheck.harness.settings.config import RunConfig


@pytest.fixture
def roomy(monkeypatch):
    """A machine with room for anything; each test then takes one fact away."""
    monkeypatch.setattr(limits, "available_memory", lambda: 2**50)
    monkeypatch.setattr(limits, "process_limits", lambda: {"the process limit (ulimit -u)": 10**9})
    monkeypatch.setattr(limits, "fd_limit", lambda: 10**9)
    monkeypatch.setattr(limits, "free_disk", lambda path: ("/data", 2**60))
    return monkeypatch


def test_the_default_run_fits_on_this_machine():
    preflight(RunConfig())   # the real machine's facts: 8 workers x 1 slot for 30 s


def test_too_little_memory(roomy):
    roomy.setattr(limits, "available_memory", lambda: 1 * 2**30)
    msg = refused_by_preflight(workers=100, time_limit_s=3)
    assert "--workers 100" in msg and "memory" in msg and "1.0 GB is available" in msg
    assert "use at most 19 workers" in msg       # (1024 - 200 - 64) / 40


def test_memory_counts_the_slots(roomy):
    roomy.setattr(limits, "available_memory", lambda: 1 * 2**30)
    preflight(RunConfig(workers=10))
    msg = refused_by_preflight(workers=10, slots=200)
    assert "200 slot(s) each" in msg


def test_too_few_processes(roomy):
    roomy.setattr(limits, "process_limits", lambda: {"the process limit (ulimit -u)": 50})
    msg = refused_by_preflight(workers=8)
    assert "processes and threads" in msg and "ulimit -u" in msg and "allows 50 more" in msg
    assert "lower --workers/--slots or raise the limit" in msg


def test_the_machine_wide_thread_limit_counts_what_runs(monkeypatch):
    monkeypatch.setattr(limits, "_read_int", lambda path: 1000)
    monkeypatch.setattr(limits, "_running_tasks", lambda: 900)
    monkeypatch.setattr(resource, "getrlimit", lambda which: (resource.RLIM_INFINITY, resource.RLIM_INFINITY))
    assert limits.process_limits() == {"kernel.threads-max": 100, "kernel.pid_max": 100}


def test_too_few_file_descriptors(roomy):
    roomy.setattr(limits, "fd_limit", lambda: 256)
    msg = refused_by_preflight(workers=200)
    assert "the harness needs about 480 open files but the limit is 256" in msg
    assert "ulimit -n" in msg and "lower --workers/--slots" in msg


def test_a_worker_with_many_slots_needs_files(roomy):
    roomy.setattr(limits, "fd_limit", lambda: 120)
    assert "each worker needs" in refused_by_preflight(workers=1, slots=100)


def test_too_little_disk(roomy):
    roomy.setattr(limits, "free_disk", lambda path: ("/data", 100 * 2**20))
    msg = refused_by_preflight(workers=64, time_limit_s=600)
    # 48 KB per slot-second (1.76 GB), 16 MB, and 65 history files' 4 MB reservations: 2.0 GB
    assert "--time-limit 600s" in msg and "/data has 100 MB free" in msg and "2.0 GB" in msg
    for fix in ("lower --time-limit or --workers", "free space", "another --results-dir"):
        assert fix in msg


def test_free_disk_looks_at_the_nearest_existing_folder(tmp_path):
    where, free = limits.free_disk(str(tmp_path / "not" / "yet" / "results"))
    assert where == str(tmp_path) and free > 0
