"""The chaos script of the harness itself (``bench/chaos.py``) with a small N: SIGKILL the
harness and a worker, and cut the audit's connection, each at a random moment of a
random short run with faults. Every run directory is checkable or refused in one line, no
traceback, and after ``leasecheck cleanup`` nothing of the run is left (no process, none stopped,
no skewed clock, no ledger, no port held). The documented run (N >= 30) is in bench/RESULTS.md."""
import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.integration, pytest.mark.slow]
ROOT = Path(__file__).resolve().parents[2]


def test_three_kills_leave_nothing_behind_and_every_run_is_checkable():
    p = subprocess.run([sys.executable, "bench/chaos.py", "--kills", "3", "--targets", "harness,worker,audit",
                        "--time-limits", "3", "--json"], cwd=ROOT, capture_output=True, text=True, timeout=600)
    counts = json.loads(p.stdout.strip().splitlines()[-1])
    assert counts["kills"] == 3, p.stderr
    assert counts["tracebacks"] == 0, p.stderr
    assert counts["leftovers"] == 0, p.stderr
    assert counts["checked: neither"] == 0 and counts["VALID after a cut"] == 0, p.stderr
    assert counts["runs that did not start"] == 0 and counts["harness hung"] == 0, p.stderr
    assert counts["checked: verdict"] + counts.get("checked: refused in one line", 0) == 3, p.stderr
    assert p.returncode == 0, p.stderr


def test_a_store_killed_under_the_run_stops_it_checkable_and_leaves_nothing():
    p = subprocess.run([sys.executable, "bench/chaos.py", "--kills", "1", "--targets", "store",
                        "--time-limits", "3", "--json"], cwd=ROOT, capture_output=True, text=True, timeout=600)
    counts = json.loads(p.stdout.strip().splitlines()[-1])
    assert counts["kills"] == 1 and counts["tracebacks"] == 0 and counts["leftovers"] == 0, p.stderr
    assert counts["VALID after a cut"] == 0 and counts["checked: verdict"] == 1, p.stderr
    assert p.returncode == 0, p.stderr
