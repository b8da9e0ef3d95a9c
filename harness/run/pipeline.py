"""Run, then check: the one pipeline behind every way of running a lease.

``leasecheck run``, ``hunt``, ``matrix``, the replays of ``shrink``, the Python API
(``leasecheck.run`` ...) and the ``leasecheck_run`` pytest fixture all carry out a planned run with
`run_and_check` and judge a run directory with `check_and_save`; nothing else starts a run or
writes a verdict. Judging writes what a checked run directory holds besides its history:
``results.json`` (the `Result`), ``witness.md`` / ``witness.json`` when there is a witness,
``timeline.json`` (what the report draws of the history, gathered by the check in its one pass),
the run's ``report.html`` and the results directory's ``index.html`` — the history is read once
for all of them.
"""
from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Callable, ContextManager

from leasecheck.checkers import check_run
from leasecheck.checkers.present.fault_report import markdown as faults_markdown
from leasecheck.harness.reports.html import write_pages
from leasecheck.harness.run.preflight import Plan
from leasecheck.harness.run.runner import Run
from leasecheck.result import Result
from leasecheck.rundir import save_timeline, save_witnesses


def _silent(*_args, **_kwargs) -> None:
    return None


def check_and_save(run_dir: Path, *, all_witnesses: bool = False, progress=None, parts: list | None = None,
                   on_note: Callable[[str], None] = _silent, liveness: str | None = None) -> Result:
    """Check the run in ``run_dir`` and write its verdict files (``results.json``, the witness,
    ``timeline.json``, ``report.html``, the index). ``parts``, when given, receives each property's own result (for
    JUnit); ``progress(done, total)`` hears how far the check has read; ``on_note`` hears why a
    page could not be written; ``liveness`` (``fail``/``warn``), when given, replaces the run's own
    setting. Raises `HistoryError` for a directory with no history."""
    run_dir = Path(run_dir)
    drawn: list[dict] = []
    data = check_run(run_dir, all_witnesses=all_witnesses, strict=True, progress=progress, parts=parts,
                     liveness=liveness, timeline=drawn)
    result = Result.from_json(data, run_dir)
    result.save()
    witnesses = [w for w in [data.get("witness")] + data.get("witnesses", []) if w]
    if witnesses:
        save_witnesses(run_dir, "\n".join([w["markdown"] for w in witnesses]
                                          + [faults_markdown(data)]).rstrip("\n") + "\n", witnesses)
    timeline = drawn[0] if drawn else None     # none when the check failed: the report reads the history
    if timeline is not None:
        save_timeline(run_dir, timeline)
    _, why_not = write_pages(run_dir, timeline)
    if why_not:
        on_note(why_not)
    return result


def run_and_check(plan: Plan, *, log: Callable = _silent, watch: Callable[[Run], ContextManager] | None = None,
                  parts: list | None = None, worker_path: list[str] | None = None,
                  checking: Callable[[], ContextManager] | None = None,
                  on_note: Callable[[str], None] = _silent) -> tuple[Result, Run]:
    """Carry out ``plan`` (its history is always written) and judge it. ``watch(run)``: a context
    that shows the run while it goes (the command line's progress); ``checking()``: a context whose
    value hears the check's progress (``progress(done, total)``); ``worker_path``: directories
    the worker processes import from besides the installed packages (a caller's own lease module).
    Returns the result and the finished `Run` (``end_reason`` says whether a signal cut it short)."""
    runner = Run(plan, log=log, worker_path=worker_path)
    with (watch(runner) if watch is not None else contextlib.nullcontext()):
        run_dir = runner.execute()
    with (checking() if checking is not None else contextlib.nullcontext()) as progress:
        return check_and_save(run_dir, parts=parts, progress=progress, on_note=on_note), runner
