"""`results/index.html`: the runs of a results directory, newest first, with the same rows as
`leasecheck ls` (`leasecheck.harness.rundirs.runs`) and a link to each run's report.

Several runs may end at once in one results directory (``hunt --parallel``, ``matrix
--cluster``): each rewrites the page under an exclusive lock on ``.index.lock`` (``flock``, held by
threads and processes alike) that spans reading the runs and replacing the page, so the last
writer lists every run that had ended before it, and no reader sees a half-written page."""
from __future__ import annotations

import fcntl
import os
from pathlib import Path

from leasecheck.harness.rundirs.runs import list_runs

from leasecheck.harness.reports.html.render import render
from leasecheck.rundir import INDEX, REPORT

LOCK = ".index.lock"



def write_index(results_dir) -> Path:
    """Write ``results_dir/index.html`` (atomically) and return its path."""
    root = Path(results_dir)
    with open(root / LOCK, "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        return _write(root)


def _write(root: Path) -> Path:
    rows = [(r, (r.path / REPORT).relative_to(root).as_posix() if (r.path / REPORT).is_file() else None)
            for r in list_runs(root)]
    html = render("index.html.j2", rows=rows, root=root.resolve())
    out, tmp = root / INDEX, root / f"{INDEX}.{os.getpid()}.tmp"
    tmp.write_text(html, encoding="utf-8")
    tmp.replace(out)
    return out
