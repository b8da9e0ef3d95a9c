"""Retention for the results directory: keep the newest N run directories of each scenario,
remove the rest (`leasecheck gc --keep N`).

Only directories named like a run (``results/<scenario>/<UTC stamp>``) are candidates; the stamp
sorts as time. Never removed: the run `latest` points to, and a run with a fault ledger
(`faults-active.json`: a run still going, or a killed one whose faults `leasecheck cleanup`
must heal first).
"""
from __future__ import annotations

import re
import shutil
from dataclasses import dataclass
from pathlib import Path

from leasecheck.rundir import FAULTS_ACTIVE as LEDGER, LATEST

STAMP = re.compile(r"^\d{8}T\d{6}\.\d{6}Z$")


@dataclass(frozen=True)
class Doomed:
    path: Path
    bytes: int


def plan(results_dir: Path, keep: int) -> tuple[list[Doomed], list[str]]:
    """`(to remove, notes)`: per scenario, the runs older than its `keep` newest, minus the
    protected ones (each protected one is named in a note)."""
    results_dir = Path(results_dir)
    latest = results_dir / LATEST
    pinned = latest.resolve() if latest.is_symlink() or latest.exists() else None
    doomed, notes = [], []
    for scenario in sorted(p for p in results_dir.iterdir() if p.is_dir() and not p.is_symlink()):
        runs = sorted((p for p in scenario.iterdir()
                       if p.is_dir() and not p.is_symlink() and STAMP.match(p.name)), reverse=True)
        for run in runs[keep:]:
            if pinned is not None and run.resolve() == pinned:
                notes.append(f"kept {run}: results/latest points to it")
            elif (run / LEDGER).exists():
                notes.append(f"kept {run}: it has {LEDGER} (running, or killed: `leasecheck cleanup`)")
            else:
                doomed.append(Doomed(run, _size(run)))
    return doomed, notes


def remove(doomed: list[Doomed]) -> None:
    for d in doomed:
        shutil.rmtree(d.path)
        try:
            d.path.parent.rmdir()            # a scenario left empty goes too
        except OSError:
            pass


def _size(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file() and not f.is_symlink())
