"""`leasecheck hunt` stops at the first failing seed and prints the command that replays it; that
command fails again."""
import re
import shlex
import subprocess
import sys

import pytest

from tests.conftest import ROOT

pytestmark = pytest.mark.integration


def test_hunt_stops_at_the_first_failing_seed_and_its_replay_fails_again(leasecheck, tmp_path):
    r = leasecheck("hunt", "--lease", "naive-del", "--nemesis", "pause:holder", "--nemesis-interval", "2s",
                   "--time-limit", "4s", "--workers", "4", "--budget", "60s", "--seed", "100",
                   "--junit", str(tmp_path / "hunt.xml"))
    assert r.code == 1, r.out + r.err
    import xml.etree.ElementTree as ET
    cases = ET.parse(tmp_path / "hunt.xml").getroot().iter("testcase")     # the failing run's verdict
    assert any(c.find("failure") is not None for c in cases)
    runs = re.findall(r"hunt: (\d+) run\(s\)", r.out)           # plain progress lines: not a terminal
    assert runs, r.out
    n = int(runs[-1])
    seed = int(re.search(r"INVALID at run \d+ of the hunt .*seed (\d+)", r.out).group(1))
    assert seed == 100 + n - 1                                  # seeds 100, 101, ...: stopped at the first failing one
    run_dir = re.search(r"run directory: (\S+)", r.out).group(1)
    dirs = sorted(p for p in (tmp_path / "results" / "naive-del").iterdir() if p.is_dir())
    assert len(dirs) == n and str(dirs[-1]) == run_dir          # no run after the failing one
    command = re.search(r"replay: (leasecheck run --replay .+)", r.out).group(1)
    args = shlex.split(command)[1:]
    again = subprocess.run([sys.executable, "-m", "harness", *args, "--results-dir", str(tmp_path / "again")],
                           capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert again.returncode == 1, again.stdout + again.stderr
    assert f"seed {seed}" in again.stdout


def test_hunt_refuses_a_budget_shorter_than_one_run(leasecheck):
    r = leasecheck("hunt", "--time-limit", "10s", "--budget", "5s")
    assert r.code == 64
    assert "--budget 5s is shorter than one run (--time-limit 10s)" in r.err
