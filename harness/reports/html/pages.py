"""Write the pages of a checked run: its `report.html` and, when it lies in a results directory
(``<results>/<scenario>/<UTC stamp>``), that directory's `index.html`. A page that cannot be
written never changes a run's verdict: the reason is returned for the caller to say."""
from __future__ import annotations

from pathlib import Path

from leasecheck.harness.rundirs.gc import STAMP

from leasecheck.harness.reports.html.index import INDEX, write_index
from leasecheck.harness.reports.html.page import write_report
from leasecheck.rundir import REPORT


def results_dir_of(run_dir) -> Path | None:
    """The results directory holding `run_dir` (``results/latest`` resolved), or None."""
    run = Path(run_dir).resolve()
    return run.parent.parent if STAMP.match(run.name) else None


def write_pages(run_dir, timeline: dict | None = None) -> tuple[Path | None, str | None]:
    """`(report path, None)`, or `(None, why not)`. `timeline`: what the check gathered for the
    report (else it is read from the run directory, `write_report`)."""
    try:
        report = write_report(run_dir, timeline)
        root = results_dir_of(run_dir)
        if root is not None:
            write_index(root)
        return report, None
    except Exception as e:  # noqa: BLE001 - a report is an extra: the verdict stands without it
        return None, f"{REPORT} not written: {type(e).__name__}: {e}"


def refresh_index(results_dir) -> None:
    """Write `index.html` again where there is one (after runs were removed)."""
    if (Path(results_dir) / INDEX).is_file():
        write_index(results_dir)
