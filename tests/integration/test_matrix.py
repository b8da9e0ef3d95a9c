"""`leasecheck matrix` with real runs: the table's verdicts, the exit code, progress as plain lines
off a terminal; bad input refused before any run; the nightly CI example's command is valid."""
import re
import shlex
import signal
import subprocess
import sys
import time

import pytest

from tests.conftest import ROOT

pytestmark = pytest.mark.integration


def test_two_leases_under_holder_pauses(leasecheck, tmp_path):
    # A 0.5 s lease, 0.3 s jobs: without faults every job fits its lease; a paused holder outlives
    # it, naive-del's late DEL then frees the next holder's claim, token-cas's release does not.
    results = tmp_path / "results"
    r = leasecheck("matrix", "--lease", "naive-del,token-cas", "--nemesis", "pause:holder",
                   "--ttl", "500ms", "--job-duration", "0.3s", "--nemesis-interval", "1s",
                   "--time-limit", "4s", "--workers", "4", "--seed", "1", "--results-dir", str(results))
    assert r.code == 1, r.out + r.err                       # a cell is INVALID
    tables = list(results.glob("matrix-*.md"))
    assert len(tables) == 1 and tables[0].with_suffix(".html").is_file()
    rows = {m.group(1): m.group(2) for m in re.finditer(r"^\| `([^`]+)` \| (.*) \|$", tables[0].read_text(), re.M)}
    assert rows["naive-del"].startswith("**INVALID**: ") and "foreign release" in rows["naive-del"]
    assert rows["token-cas"].startswith("**VALID**: ")
    for lease, cell in rows.items():                         # each cell links to its run and its report
        run = re.search(r"\[run\]\(([^)]+)/\)", cell).group(1)
        assert (results / run / "results.json").is_file() and run.startswith(lease + "/")
        assert f"[report]({run}/report.html)" in cell
    assert "Seed 1 in every cell" in tables[0].read_text()
    # not a terminal: progress as plain lines, one run after the other, no escape codes
    assert "\x1b" not in r.out and "\r" not in r.out
    progress = [line for line in r.out.splitlines() if ": progress: " in line]
    assert any(line.startswith("[1/2] naive-del x pause:holder: progress: ") for line in progress)
    assert any(line.startswith("[2/2] token-cas x pause:holder: progress: ") for line in progress)
    assert "[1/2] naive-del x pause:holder: INVALID" in r.out and "[2/2] token-cas x pause:holder: VALID" in r.out


@pytest.mark.parametrize("args,says", [
    (["--lease", "naive-del,no-such-lease"], "--lease 'no-such-lease' is not a known lease"),
    (["--nemesis", "pause:holder", "--nemesis", "latency,paws"], "no fault named 'paws'"),
    (["--nemesis", "pause:holder", "--nemesis", " , "], "--nemesis none for a column without faults"),
])
def test_bad_input_is_refused_before_any_run(leasecheck, tmp_path, args, says):
    results = tmp_path / "results"
    r = leasecheck("matrix", "--time-limit", "5s", "--nemesis-interval", "2s", *args, "--results-dir", str(results))
    assert r.code == 64, r.out + r.err
    assert says in r.err and len(r.err.strip().splitlines()) == 1
    assert not results.exists()                             # nothing ran


def test_the_nightly_example_runs_a_valid_matrix_command(tmp_path):
    text = (ROOT / "examples" / "nightly.yml").read_text()
    line = next(ln for ln in text.splitlines() if "leasecheck matrix" in ln and not ln.lstrip().startswith("#"))
    args = shlex.split(line)[1:]                             # after .venv/bin/leasecheck
    assert args[0] == "matrix"
    p = subprocess.run([sys.executable, "-m", "leasecheck", *args, "--dry-run",
                        "--results-dir", str(tmp_path / "results")],
                       capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert p.returncode == 0, p.stdout + p.stderr
    assert re.search(r"matrix: 8 lease\(s\) x 4 fault mix\(es\) = 32 run\(s\)", p.stdout)
    for step in ("actions/upload-artifact", "path: results/", "GITHUB_STEP_SUMMARY", "1) echo \"::error::"):
        assert step in text


def test_ctrl_c_stops_the_matrix_and_still_writes_the_table(tmp_path):
    """SIGINT during the first cell: that run ends interrupted (checked, inconclusive), the other
    cells never start and say so, the table is written, and the exit code is 2, not 0."""
    results = tmp_path / "results"
    p = subprocess.Popen([sys.executable, "-m", "leasecheck", "matrix", "--lease", "token-cas,token-cas-renew",
                          "--nemesis", "none", "--workers", "2", "--time-limit", "30s", "--results-dir", str(results)],
                         cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            started = list(results.glob("*/*/history.d/harness.jsonl"))
            if started and "run_start" in started[0].read_text():
                break
            time.sleep(0.05)
        time.sleep(1.5)
        p.send_signal(signal.SIGINT)
        out, err = p.communicate(timeout=90)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    assert p.returncode == 2, out + err
    table = next(results.glob("matrix-*.md")).read_text()
    assert re.search(r"^\| `token-cas` \| \*\*INCONCLUSIVE\*\*: .*SIGINT", table, re.M), table
    assert "| `token-cas-renew` | **NOT RUN**: the matrix stopped first |" in table
    assert not (results / "token-cas-renew").exists()
