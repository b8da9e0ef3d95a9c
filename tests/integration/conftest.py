"""Helpers that run the real ``leasecheck`` command line in a subprocess."""
from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest


@dataclass
class Outcome:
    code: int
    out: str
    err: str
    run_dir: Path | None

    @property
    def results(self) -> dict:
        return json.loads((self.run_dir / "results.json").read_text())


@pytest.fixture
def leasecheck(tmp_path):
    def run(*args: str, timeout: float = 180) -> Outcome:
        cmd = [sys.executable, "-m", "harness", *args]
        if args and args[0] == "run":
            cmd += ["--results-dir", str(tmp_path / "results")]
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout,
                           env={"COLUMNS": "160", "PATH": "/usr/bin:/bin", "HOME": str(tmp_path)})
        latest = tmp_path / "results" / "latest"
        return Outcome(p.returncode, p.stdout, p.stderr, latest.resolve() if latest.exists() else None)

    return run
