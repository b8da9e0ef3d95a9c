"""HTML pages a person opens after a run: `report.html` in a run directory (from its stored
files alone) and `index.html` listing the runs of a results directory. Each page is one
self-contained file (inline style, script and data) that opens offline."""
from leasecheck.harness.reports.html.index import write_index
from leasecheck.harness.reports.html.page import write_report
from leasecheck.harness.reports.html.pages import refresh_index, results_dir_of, write_pages

__all__ = ["write_report", "write_index", "write_pages", "refresh_index", "results_dir_of"]
