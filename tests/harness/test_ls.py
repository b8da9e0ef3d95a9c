"""`leasecheck ls`: one row per stored run, newest first, read from results.json and config.json."""
import json
import os
import subprocess
import sys

import pytest

from leasecheck.harness.rundirs.runs import list_runs
from tests.conftest import ROOT


def _run(results, scenario, stamp, config, result=None):
    d = results / scenario / stamp
    d.mkdir(parents=True)
    (d / "config.json").write_text(json.dumps(config))
    if result is not None:
        (d / "results.json").write_text(json.dumps(result))
    return d


def _made(results):
    a = _run(results, "naive-del", "20261201T090000.000000Z", {"lease": "naive-del"},
             {"valid": False, "faults": [{"fault": "pause"}, {"fault": "pause"}, {"fault": "clock"}]})
    b = _run(results, "my_lease-MyLease", "20261201T100000.000000Z",
             {"lease": "examples/my_lease.py:MyLease", "nemesis": "pause"}, {"valid": True, "faults": []})
    c = _run(results, "token-cas", "20261201T110000.000000Z", {"lease": "token-cas"})   # killed
    d = _run(results, "token-cas", "20261201T080000.000000Z", {"lease": "token-cas"}, {"valid": "unknown"})
    (results / "latest").symlink_to(c.relative_to(results))
    return a, b, c, d


def test_rows_newest_first_with_verdicts_and_faults(tmp_path):
    a, b, c, d = _made(tmp_path)
    rows = list_runs(tmp_path)
    assert [r.path for r in rows] == [c, b, a, d]          # latest's link is not a second row
    assert [r.verdict for r in rows] == ["not checked", "VALID", "INVALID", "INCONCLUSIVE"]
    assert rows[2].faults == "pause×2, clock×1" and rows[1].faults == "pause" and rows[0].faults == "none"
    assert rows[1].lease == "examples/my_lease.py:MyLease" and rows[2].time == "2026-12-01 09:00:00"


@pytest.mark.slow   # the real command line in a subprocess
def test_ls_prints_the_table(tmp_path):
    a, *_ = _made(tmp_path)
    env = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
    p = subprocess.run([sys.executable, "-m", "leasecheck", "ls", "--results-dir", str(tmp_path)],
                       capture_output=True, text=True, cwd=ROOT, env=env, timeout=60)
    assert p.returncode == 0, p.stderr
    lines = p.stdout.splitlines()
    assert lines[0].split() == ["time", "(UTC)", "scenario", "lease", "faults", "verdict", "path"]
    row = next(line for line in lines if str(a) in line)
    assert row.split()[2:6] == ["naive-del", "naive-del", "pause×2,", "clock×1"] and "INVALID" in row
    assert len(lines) == 5
