"""`results/index.html`: the runs of a results directory, newest first, with the same rows as
`leasecheck ls` (`leasecheck.harness.rundirs.runs`) and a link to each run's report."""
from __future__ import annotations

from pathlib import Path

from leasecheck.harness.rundirs.runs import list_runs

from leasecheck.harness.reports.html.render import render
from leasecheck.rundir import INDEX, REPORT



def write_index(results_dir) -> Path:
    """Write ``results_dir/index.html`` (atomically) and return its path."""
    root = Path(results_dir)
    rows = [(r, (r.path / REPORT).relative_to(root).as_posix() if (r.path / REPORT).is_file() else None)
            for r in list_runs(root)]
    html = render("index.html.j2", rows=rows, root=root.resolve())
    out, tmp = root / INDEX, root / (INDEX + ".tmp")
    tmp.write_text(html, encoding="utf-8")
    tmp.replace(out)
    return out
