"""What a run is doing while it goes: elapsed against the time limit, lease calls per second,
acquires won and lost, the faults acting now, and the warning signs the workers reported so far.

On a terminal it is one status block redrawn in place four times a second (``rich.live``); when
the output is not a terminal (a CI log, a pipe, a file) it is one plain line every few seconds
and one when the workers stop, so a log keeps a readable record without escape codes. ``quiet``
shows nothing. The counts come from ``leasecheck.harness.run.live_stats`` (the slot board and the history
files being written), read by this display's own thread: the run loop is not touched.

    with RunProgress(console, runner, title="naive-del"):
        runner.execute()
"""
from __future__ import annotations

import threading
import time
from collections import deque

from rich.console import Console, Group
from rich.live import Live
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from leasecheck.harness.run.live_stats import LiveStats, Snapshot
from leasecheck.rundir import HISTORY_PARTS, SLOTS

REFRESH_PER_SECOND = 4
VERDICT_LATER = "the checker's verdict comes after the run"


def log_interval_s(time_limit_s: float) -> float:
    """How often a plain progress line is written: a quarter of the run, between 1 s and 10 s
    (a 1-hour run writes 360 lines, a 4 s run one a second)."""
    return min(10.0, max(1.0, time_limit_s / 4))


class Rate:
    """Lease calls per second over the last two seconds of samples."""

    def __init__(self, window_s: float = 2.0):
        self.window_s = window_s
        self._points: deque[tuple[float, int]] = deque([(0.0, 0)])   # the run starts with no calls

    def add(self, elapsed_s: float, calls: int) -> float:
        self._points.append((elapsed_s, calls))
        while len(self._points) > 2 and elapsed_s - self._points[0][0] > self.window_s:
            self._points.popleft()
        (t0, c0), (t1, c1) = self._points[0], self._points[-1]
        return (c1 - c0) / (t1 - t0) if t1 > t0 else 0.0


def _faults(s: Snapshot) -> str:
    active = ", ".join(s.faults_active) if s.faults_active else "none active"
    return f"{active} ({s.faults_done} done)" if s.faults_done else active


def _signs(s: Snapshot) -> str:
    return (f"{s.found_nothing} release(s) found nothing, "
            f"{s.overlaps} job run(s) overlapped another on their key")


def plain_line(s: Snapshot, time_limit_s: float, rate: float, stopping: bool) -> str:
    """``progress: 12.0 s of 30 s, 1520 calls/s, acquires won 61 lost 5702 unknown 0, faults:
    pause:holder (1 done), so far 3 release(s) found nothing, ...`` — one line, no markup."""
    state = ", stopping (jobs in flight finish)" if stopping else ""
    return (f"progress: {s.elapsed_s:.1f} s of {time_limit_s:g} s{state}, {rate:.0f} calls/s, "
            f"acquires won {s.acquires_won} lost {s.acquires_lost} unknown {s.acquires_unknown}, "
            f"faults: {_faults(s)}, so far {_signs(s)} ({VERDICT_LATER})")


def block(s: Snapshot, time_limit_s: float, rate: float, stopping: bool, title: str = ""):
    """The status block of a terminal."""
    done = min(1.0, s.elapsed_s / time_limit_s) if time_limit_s > 0 else 1.0
    width = 30
    bar = "━" * round(done * width)
    head = Text.assemble((title + "  " if title else "", "bold"),
                         f"{s.elapsed_s:5.1f} s of {time_limit_s:g} s  ",
                         (bar, "green"), ("━" * (width - len(bar)), "grey37"),
                         ("  stopping: jobs in flight finish and release" if stopping else "", "yellow"))
    rows = Table.grid(padding=(0, 2))
    rows.add_column(style="dim")
    rows.add_column()
    rows.add_row("lease calls", f"{rate:,.0f}/s  ({s.calls:,} done)")
    rows.add_row("acquires", f"[green]won {s.acquires_won:,}[/]  lost {s.acquires_lost:,}"
                 + (f"  [yellow]unknown {s.acquires_unknown:,}[/]" if s.acquires_unknown else ""))
    rows.add_row("faults", escape(_faults(s)))
    signs = f"[{'yellow' if s.found_nothing or s.overlaps else 'green'}]{escape(_signs(s))}[/]"
    rows.add_row("so far", f"{signs}\n[dim]as the workers reported them; {VERDICT_LATER}[/]")
    return Group(head, rows)


class RunProgress:
    """Shows a ``leasecheck.harness.run.runner.Run``'s progress while ``runner.execute()`` runs in the block."""

    def __init__(self, console: Console, runner, quiet: bool = False, title: str = "", transient: bool = False):
        """``transient``: on a terminal the block goes away when the run ends (a matrix prints
        one line per cell instead); otherwise its last state stays on the screen."""
        self.console, self.runner, self.quiet, self.title = console, runner, quiet, title
        self.transient = transient
        self.time_limit_s = runner.cfg.time_limit_s
        self._stats: LiveStats | None = None
        self._rate = Rate()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._live: Live | None = None
        self._lock = threading.Lock()

    # -- sampling ------------------------------------------------------------------------
    def _sample(self, final: bool = False) -> tuple[Snapshot, float, bool] | None:
        history = self.runner.history
        if history is None:           # the workers have not been told to go yet
            return None
        with self._lock:
            if self._stats is None:
                self._stats = LiveStats(self.runner.run_dir / HISTORY_PARTS, board=self.runner.run_dir / SLOTS)
            snap = self._stats.sample(history.now(), final=final)
            if final:   # the whole run's average: the workers have stopped
                return snap, snap.calls / snap.elapsed_s if snap.elapsed_s > 0 else 0.0, False
            return snap, self._rate.add(snap.elapsed_s, snap.calls), self.runner.stopped_at is not None

    def _renderable(self):
        got = self._sample()
        if got is None:
            return Text(f"{self.title}  starting the store and the workers" if self.title
                        else "starting the store and the workers", style="dim")
        snap, rate, stopping = got
        return block(snap, self.time_limit_s, rate, stopping, self.title)

    def _log_loop(self) -> None:
        every = log_interval_s(self.time_limit_s)
        while not self._stop.wait(every):
            got = self._sample()
            if got is not None:
                self._print(got)

    def _print(self, got) -> None:
        snap, rate, stopping = got
        line = plain_line(snap, self.time_limit_s, rate, stopping)
        self.console.print(f"{self.title}: {line}" if self.title else line,
                           markup=False, highlight=False, soft_wrap=True)

    # -- context -------------------------------------------------------------------------
    def __enter__(self) -> "RunProgress":
        if self.quiet:
            return self
        if self.console.is_terminal:
            self._live = Live(console=self.console, refresh_per_second=REFRESH_PER_SECOND,
                              get_renderable=self._renderable, transient=self.transient)
            self._live.__enter__()
        else:
            self._thread = threading.Thread(target=self._log_loop, name="progress", daemon=True)
            self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        if self.quiet:
            return
        self._stop.set()
        if self._thread is not None:
            self._thread.join(5)
        final = self._sample(final=True) if self.runner.history is not None else None
        if self._live is not None:
            if final is not None:
                self._live.get_renderable = lambda: block(final[0], self.time_limit_s, final[1], False, self.title)
            else:   # the run never started (its error follows): leave no "starting" line behind
                self._live.get_renderable = lambda: Text("")
            self._live.__exit__(*exc)
        elif final is not None:
            self._print(final)
        if self._stats is not None:
            self._stats.close()
