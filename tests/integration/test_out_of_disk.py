"""A results directory whose disk fills while the run goes (a small tmpfs, as a user meets it):
the preflight's estimate is satisfied, then the test writes a filler file until the disk is
full. The run stops in one line (exit 3) naming what it kept and the command to judge it, heals
its faults, leaves no process, no ``*.tmp`` and no verdict behind; once space is freed,
``leasecheck check`` judges what was kept as cut short — never VALID."""
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import psutil
import pytest

from leasecheck.harness.run.limits import MB, need
from leasecheck.harness.settings.config import RunConfig

pytestmark = pytest.mark.integration
ROOT = Path(__file__).resolve().parents[2]
WORKERS, TIME_LIMIT_S = 2, 20.0


def _fill(disk: Path, run_started: threading.Event, stop: threading.Event) -> None:
    """Once the run is going (its audit has grown), write zeros until the disk refuses them."""
    while not stop.is_set():
        audits = list(disk.glob("results/*/*/audit.log"))
        if audits and audits[0].stat().st_size > 4096:
            break
        time.sleep(0.05)
    run_started.set()
    with open(disk / "filler", "wb") as f:
        try:
            while True:
                f.write(b"\0" * (1 << 16))
                f.flush()
        except OSError:
            pass


def _run_processes(run_dir: Path) -> list[psutil.Process]:
    """Processes still alive that belong to the run: its workers and its store (named by the
    run directory on their command line) and every pid the history recorded."""
    pids = set()
    for part in (run_dir / "history.d").glob("*.jsonl"):
        for line in part.read_text(errors="replace").splitlines():
            if '"pid"' in line:
                try:
                    pids.add(json.loads(line)["pid"])
                except (ValueError, KeyError, TypeError):
                    pass
    alive = []
    for p in psutil.process_iter(["pid", "cmdline", "status"]):
        cmd = " ".join(p.info["cmdline"] or [])
        if p.info["pid"] in pids or str(run_dir) in cmd:
            alive.append(p)
    return alive


def test_a_disk_that_fills_mid_run_stops_it_in_one_line_healed_and_checkable(tmp_path):
    cfg = RunConfig(workers=WORKERS, time_limit_s=TIME_LIMIT_S)
    disk = tmp_path / "disk"
    disk.mkdir()
    size = need(cfg).disk_bytes + 8 * MB          # the preflight's estimate fits, with room to spare
    subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(disk)], check=True)
    try:
        started, stop = threading.Event(), threading.Event()
        filler = threading.Thread(target=_fill, args=(disk, started, stop), daemon=True)
        filler.start()
        p = subprocess.run(
            [sys.executable, "-m", "leasecheck", "run", "--lease", "naive-del", "--workers", str(WORKERS),
             "--time-limit", f"{TIME_LIMIT_S:g}", "--nemesis", "pause:holder", "--nemesis-interval", "1s",
             "--results-dir", str(disk / "results")],
            cwd=ROOT, capture_output=True, text=True, timeout=TIME_LIMIT_S + 120,
            env={**os.environ, "COLUMNS": "4096"})
        stop.set()
        filler.join(10)
        assert started.is_set(), p.stdout + p.stderr
        out = p.stdout + p.stderr
        assert p.returncode == 3, out
        assert "Traceback" not in out, out
        lines = p.stderr.strip().splitlines()
        assert len(lines) == 1, p.stderr
        run_dir = (disk / "results" / "latest").resolve()
        line = lines[0]
        # it names what it kept: the merged history (the histories' unused reservations, cut when
        # their writers closed, made room for it) or, where even that did not fit, history.d/
        assert "No space left on device" in line and ("history.jsonl" in line or "history.d/" in line), line
        assert line.endswith(f"leasecheck check {run_dir}"), line
        assert float(line.split(" at ")[1].split(" s:")[0]) < TIME_LIMIT_S     # it stopped early
        assert not list(run_dir.rglob("*.tmp")), list(run_dir.rglob("*"))
        assert not (run_dir / "faults-active.json").exists()     # every fault healed
        assert not (run_dir / "results.json").exists()           # no verdict without evidence
        assert _run_processes(run_dir) == []                     # no worker, store or paused process

        (disk / "filler").unlink()
        c = subprocess.run([sys.executable, "-m", "leasecheck", "check", str(run_dir)], cwd=ROOT,
                           capture_output=True, text=True, timeout=120)
        assert c.returncode in (1, 2), c.stdout + c.stderr     # a violation, or inconclusive
        assert "Traceback" not in c.stdout + c.stderr
        res = json.loads((run_dir / "results.json").read_text())
        assert res["valid"] is not True
        assert res["interrupted"]["reason"] in ("unwritable", "harness-killed"), res["interrupted"]
    finally:
        subprocess.run(["umount", "-l", str(disk)], check=False)
