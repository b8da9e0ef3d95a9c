"""The runs under a results directory, one row each, read from their stored files
(`results.json`, `config.json`) — what `leasecheck ls` prints. Nothing is checked again: a run
without `results.json` (still going, or killed before its check) says so."""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from leasecheck.harness.rundirs.gc import STAMP
from leasecheck.rundir import RunFiles, read_object

VERDICTS = {True: "VALID", False: "INVALID", "unknown": "INCONCLUSIVE"}


@dataclass(frozen=True)
class RunRow:
    time: str        # UTC, from the directory's name
    scenario: str
    lease: str
    faults: str
    verdict: str     # VALID / INVALID / INCONCLUSIVE / not checked / unreadable
    path: Path


def list_runs(results_dir: Path) -> list[RunRow]:
    """Every run directory (``<scenario>/<UTC stamp>``), newest first."""
    return [row(run) for run in run_dirs(results_dir)]


def run_dirs(results_dir: Path) -> list[Path]:
    """The run directories (``<scenario>/<UTC stamp>``) under `results_dir`, newest first."""
    results_dir = Path(results_dir)
    runs = [run for scenario in results_dir.iterdir() if scenario.is_dir() and not scenario.is_symlink()
            for run in scenario.iterdir() if run.is_dir() and STAMP.match(run.name)]
    return sorted(runs, key=lambda p: p.name, reverse=True)


def row(run: Path) -> RunRow:
    """One run's row, read from its ``config.json`` and ``results.json``."""
    files = RunFiles(run)
    config, results = read_object(files.config), read_object(files.results)
    when = datetime.strptime(run.name, "%Y%m%dT%H%M%S.%fZ").replace(tzinfo=timezone.utc)
    if results is None:
        verdict = "unreadable" if files.results.exists() else "not checked"
    else:
        verdict = VERDICTS.get(results.get("valid"), "INCONCLUSIVE")
    return RunRow(when.strftime("%Y-%m-%d %H:%M:%S"), run.parent.name,
                  str((config or {}).get("lease", "?")), _faults(config or {}, results or {}), verdict, run)


def _faults(config: dict, results: dict) -> str:
    """'pause×2, clock×1' from the checked faults; else what the configuration asked for."""
    kinds = Counter(f.get("fault", "?") for f in results.get("faults", []) + results.get("faults_not_fired", []))
    if kinds:
        return ", ".join(f"{k}×{n}" for k, n in kinds.items())
    if config.get("schedule"):
        return ", ".join(f"{k}×{n}" for k, n in Counter(s.get("fault", "?") for s in config["schedule"]).items())
    return str(config.get("nemesis") or "none")

