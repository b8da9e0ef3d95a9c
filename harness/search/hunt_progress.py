"""The progress of a hunt, one line: runs, seeds, elapsed time against the budget, best so far.

On a terminal it is a live line redrawn in place (rich); otherwise (a log, CI, a pipe) one plain
line per finished run, so the record of a long hunt can be read afterwards."""
from __future__ import annotations

from rich.console import Console
from rich.live import Live
from rich.markup import escape

from leasecheck.harness.search.hunt import EXIT_INVALID, EXIT_VALID, Outcome, Tally

_WORD = {EXIT_VALID: "valid", EXIT_INVALID: "INVALID"}


def _best(o: Outcome | None) -> str:
    if o is None:
        return "none yet"
    if o.exit_code == EXIT_INVALID:
        return f"seed {o.seed} INVALID"
    return f"seed {o.seed}, {o.near_misses} near miss(es)" if o.near_misses else "no near miss yet"


def line(tally: Tally, budget_s: float) -> str:
    """``hunt: 3 runs (seeds 11..13), 41 s of 600 s, last seed 13 valid, best so far: seed 12, 2 near misses``."""
    runs = tally.runs
    seeds = ", ".join(str(o.seed) for o in runs[-3:])
    more = "..., " if len(runs) > 3 else ""
    last = f"last {_WORD.get(runs[-1].exit_code, 'inconclusive')}" if runs else "first run going"
    return (f"hunt: {len(runs)} run(s) (seeds {more}{seeds or '-'}), {tally.elapsed_s:.0f} s of {budget_s:g} s, "
            f"{last}, best so far: {_best(tally.best)}")


class HuntProgress:
    """``with HuntProgress(console, budget_s, tally) as show: hunt(..., on_run=show, tally=tally)``;
    the live line is redrawn twice a second from ``tally`` (its elapsed time moves during a run)."""

    def __init__(self, console: Console, budget_s: float, tally: Tally):
        self.console, self.budget_s, self.tally = console, budget_s, tally
        self._live: Live | None = None

    def __enter__(self) -> "HuntProgress":
        if self.console.is_terminal:
            self._live = Live(console=self.console, refresh_per_second=2, transient=False,
                              get_renderable=lambda: escape(line(self.tally, self.budget_s)))
            self._live.__enter__()
        return self

    def __call__(self, tally: Tally) -> None:
        if self._live is None:
            self.console.print(line(tally, self.budget_s), markup=False, highlight=False, soft_wrap=True)

    def __exit__(self, *exc) -> None:
        if self._live is not None:
            self._live.__exit__(*exc)
