"""`results/index.html`: the runs of a results directory, newest first, with the same rows as
`leasecheck ls` (`leasecheck.harness.rundirs.runs`) and a link to each run's report.

Several runs may end at once in one results directory (``hunt --parallel``, ``matrix
--cluster``): each rewrites the page under an exclusive lock on ``.index.lock`` (``flock``, held by
threads and processes alike) that spans reading the runs and replacing the page, so the last
writer lists every run that had ended before it, and no reader sees a half-written page.

The page is written after every run, so it is kept incremental: each run's row is remembered in
``.index-rows.json`` with the size and modification time of the two files it is read from
(``config.json``, ``results.json``), and a run's files are read again only when those changed
(a new run, one checked again); the others' rows come from there. A missing or damaged cache is
rebuilt from the runs."""
from __future__ import annotations

import fcntl
import json
import os
from pathlib import Path

from leasecheck.harness.rundirs.runs import RunRow, row, run_dirs

from leasecheck.harness.reports.html.render import render
from leasecheck.rundir import CONFIG, INDEX, REPORT, RESULTS, read_object

LOCK = ".index.lock"
ROWS = ".index-rows.json"     # run (relative path) -> [its files' stamp, the row's fields]
_FIELDS = ("time", "scenario", "lease", "faults", "verdict")


def write_index(results_dir) -> Path:
    """Write ``results_dir/index.html`` (atomically) and return its path."""
    root = Path(results_dir)
    with open(root / LOCK, "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        return _write(root)


def _write(root: Path) -> Path:
    rows = [(r, (r.path / REPORT).relative_to(root).as_posix() if (r.path / REPORT).is_file() else None)
            for r in _rows(root)]
    html = render("index.html.j2", rows=rows, root=root.resolve())
    out, tmp = root / INDEX, root / f"{INDEX}.{os.getpid()}.tmp"
    tmp.write_text(html, encoding="utf-8")
    tmp.replace(out)
    return out


def _rows(root: Path) -> list[RunRow]:
    """Every run's row, newest first (`runs.list_runs`'s), reading only the runs whose files
    changed since the cache was written; the cache is written again (atomically)."""
    cache = read_object(root / ROWS) or {}
    fresh, rows = {}, []
    for run in run_dirs(root):
        name = run.relative_to(root).as_posix()
        stamp = _stamp(run)
        kept = cache.get(name)
        if (isinstance(kept, list) and len(kept) == 2 and kept[0] == stamp and isinstance(kept[1], list)
                and len(kept[1]) == len(_FIELDS) and all(isinstance(v, str) for v in kept[1])):
            r = RunRow(*kept[1], path=run)
        else:
            r = row(run)
        fresh[name] = [stamp, [getattr(r, f) for f in _FIELDS]]
        rows.append(r)
    if fresh != cache:
        tmp = root / f"{ROWS}.{os.getpid()}.tmp"
        tmp.write_text(json.dumps(fresh), encoding="utf-8")
        tmp.replace(root / ROWS)
    return rows


def _stamp(run: Path) -> list:
    """What the row is read from, as it is now: each file's size and modification time (None
    when absent)."""
    out = []
    for name in (CONFIG, RESULTS):
        try:
            st = (run / name).stat()
            out.append([st.st_size, st.st_mtime_ns])
        except OSError:
            out.append(None)
    return out
