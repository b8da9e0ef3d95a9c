"""A slot's job frozen on the harness's word: the ``hang:holder`` fault.

The harness writes ``hang <slot> <token>`` down a worker's stdin; from then on that slot's job
makes no progress — its remaining work stays what it was — while the process, the slot's
connection and its renewals (``renew()`` every TTL/3, from the job's own loop) keep running, until
``unhang <slot>``. The worker answers ``hang <token> 1`` when the slot was inside a job at that
moment (holding a claim), ``hang <token> 0`` otherwise, on its stdout (``harness.run.replies``).
This is the case an auto-renewing lease gets wrong: a hung holder whose claim never expires.
"""
from __future__ import annotations

import threading

TICK_S = 0.01     # how often a frozen job looks whether it may go on


class Stall:
    """Which of a worker's slots are frozen now, and which are inside a job (thread-safe)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._frozen: set[str] = set()
        self._in_job: set[str] = set()
        self._wake: dict[str, threading.Event] = {}
        self._left: dict[str, float] = {}    # a frozen job's remaining work, fixed at the freeze

    def sleep(self, process: str, seconds: float) -> None:
        """A job's sleep, cut short by a freeze (so the job stops at once, not at its next wake)."""
        wake = self._wake.get(process)
        if wake is None:
            wake = self._wake.setdefault(process, threading.Event())
        if wake.wait(seconds):
            wake.clear()

    def freeze(self, process: str) -> bool:
        """Freeze ``process``'s job; True when it was inside one."""
        with self._lock:
            self._frozen.add(process)
            wake = self._wake.setdefault(process, threading.Event())
            wake.set()
            return process in self._in_job

    def thaw(self, process: str) -> None:
        with self._lock:
            self._frozen.discard(process)

    def frozen(self, process: str) -> bool:
        return process in self._frozen

    def job(self, process: str, running: bool) -> None:
        # No lock: called twice per attempt by the slot's own thread, and each step is atomic
        # (a freeze reading ``_in_job`` sees the job either started or not, as under a lock).
        if running:
            self._in_job.add(process)
        else:
            self._in_job.discard(process)
        if self._left:
            self._left.pop(process, None)

    def moved_end(self, process: str, now: float, end: float) -> tuple[float, bool]:
        """A job's end as a freeze moves it, and whether the job is frozen: while frozen its
        remaining work stays what it was at the freeze, so the end moves with the clock."""
        if process not in self._frozen:
            self._left.pop(process, None)
            return end, False
        left = self._left.setdefault(process, max(0.0, end - now))
        return now + left + TICK_S, True
