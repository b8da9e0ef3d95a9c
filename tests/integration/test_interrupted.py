"""A run stopped by Ctrl-C (SIGINT) before its time limit is inconclusive, never VALID — unless a
violation was already proven — and `leasecheck check` on the stored run says the same."""
import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration
ROOT = Path(__file__).resolve().parents[2]


def _interrupt_after(results: Path, seconds: float, *args: str) -> tuple[int, str, Path]:
    """Start `leasecheck run ARGS --time-limit 30`, send SIGINT `seconds` after its workers
    started (the run_start event), and return (exit code, stdout, run directory)."""
    p = subprocess.Popen([sys.executable, "-m", "leasecheck", "run", *args, "--time-limit", "30",
                          "--results-dir", str(results)], cwd=ROOT,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            harness = list(results.glob("*/*/history.d/harness.jsonl"))
            if harness and "run_start" in harness[0].read_text():
                break
            time.sleep(0.05)
        time.sleep(seconds)
        p.send_signal(signal.SIGINT)
        out, err = p.communicate(timeout=90)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    return p.returncode, out + err, harness[0].parents[1]


def _check(run_dir: Path) -> tuple[int, dict, str]:
    c = subprocess.run([sys.executable, "-m", "leasecheck", "check", str(run_dir)], cwd=ROOT,
                       capture_output=True, text=True, timeout=120, env={"COLUMNS": "200", "PATH": "/usr/bin:/bin"})
    return c.returncode, json.loads((run_dir / "results.json").read_text()), c.stdout


def test_a_run_interrupted_with_sigint_is_inconclusive(tmp_path):
    code, out, run_dir = _interrupt_after(tmp_path / "results", 2.5, "--lease", "token-cas",
                                          "--workers", "2", "--job-duration", "0.2s", "--ttl", "1s")
    res = json.loads((run_dir / "results.json").read_text())
    assert code == 2, out
    assert res["valid"] == "unknown"
    cut = res["interrupted"]
    assert cut["reason"] == "SIGINT" and cut["planned_s"] == 30
    assert 2.0 <= cut["actual_s"] <= 10, cut
    assert "cut short" in out and "SIGINT after" in out and "INCONCLUSIVE" in out
    assert res["foreign_releases"] == 0 and res["claims"]["released_by_holder"] > 0   # it did run
    again, checked, said = _check(run_dir)
    assert again == 2 and checked["interrupted"] == cut and "cut short" in said


def test_an_interrupted_run_with_a_proven_violation_is_invalid(tmp_path):
    # Every job (0.5 s) outlives its lease (0.2 s) and naive-del deletes by name: foreign releases
    # come within the first second, before the interruption.
    code, out, run_dir = _interrupt_after(tmp_path / "results", 2.5, "--lease", "naive-del",
                                          "--workers", "4", "--job-duration", "0.5s", "--ttl", "200ms")
    res = json.loads((run_dir / "results.json").read_text())
    assert code == 1, out
    assert res["valid"] is False and res["foreign_releases"] >= 1
    assert res["interrupted"]["reason"] == "SIGINT" and "cut short" in out
    again, checked, _ = _check(run_dir)
    assert again == 1 and checked["interrupted"] == res["interrupted"]
