"""The progress of a shrink, one line: candidates and replays so far, elapsed time against the
budget, the candidate being voted on, the smallest failing one so far.

As the hunt's line (``leasecheck.harness.search.hunt_progress``): redrawn in place on a terminal, one plain line
per finished replay otherwise (a log keeps the record)."""
from __future__ import annotations

from rich.console import Console
from rich.live import Live
from rich.markup import escape

from leasecheck.harness.search.shrink import Search


def line(search: Search) -> str:
    """``shrink: 4 candidate(s), 9 replay(s), 101 s of 600 s; trying (faults) 1 fault(s), 4
    worker(s), 7.1 s: 1 of 1 failed; smallest failing: 2 fault(s), 4 worker(s), 9.4 s (2 of 2)``."""
    budget = search.policy.budget_s
    head = (f"shrink: {len(search.trials)} candidate(s), {search.replay_count} replay(s), "
            f"{search.elapsed_s:.0f} s of {budget:g} s")
    now = search.current
    trying = f"; trying ({now.stage}) {now.candidate.describe()}: {now.rate()} failed" if now else ""
    best = search.best_trial
    smallest = (f"; smallest failing: {best.candidate.describe()} ({best.rate()})" if best
                else "; smallest failing: none yet")
    return head + trying + smallest


class ShrinkProgress:
    """``with ShrinkProgress(console, search) as show: search.on_replay = show; search.run()``."""

    def __init__(self, console: Console, search: Search):
        self.console, self.search = console, search
        self._live: Live | None = None

    def __enter__(self) -> "ShrinkProgress":
        if self.console.is_terminal:
            self._live = Live(console=self.console, refresh_per_second=2, transient=False,
                              get_renderable=lambda: escape(line(self.search)))
            self._live.__enter__()
        return self

    def __call__(self, search: Search) -> None:
        if self._live is None:
            self.console.print(line(search), markup=False, highlight=False, soft_wrap=True)

    def __exit__(self, *exc) -> None:
        if self._live is not None:
            self._live.__exit__(*exc)
