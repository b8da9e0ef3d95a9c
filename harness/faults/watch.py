"""Watch a condition while a fault acts: a thread asks ``probe()`` every ``period_s`` and keeps
the longest unbroken span in which it held — the evidence that a pause really stopped its target
for (about) the time asked, not just that a signal was sent."""
from __future__ import annotations

import threading
import time
from typing import Callable


class Watch:
    def __init__(self, probe: Callable[[], bool], period_s: float = 0.02):
        self.probe, self.period_s = probe, period_s
        self.samples = 0
        self.held = 0
        self._run_start: float | None = None
        self._longest = 0.0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="fault-watch", daemon=True)

    def start(self) -> "Watch":
        self._thread.start()
        return self

    def stop(self) -> float:
        """Stop watching (call it before the fault is undone); returns the longest span, in
        seconds, between the first and the last sample of an unbroken run of samples where the
        condition held (0.0 when it never held)."""
        self._stop.set()
        self._thread.join(5)
        return round(self._longest, 3)

    def _loop(self) -> None:
        while True:
            now = time.monotonic()
            self._sample(now)
            if self._stop.wait(self.period_s):
                self._sample(time.monotonic())  # the last look, just before the undo
                return

    def _sample(self, now: float) -> None:
        try:
            ok = bool(self.probe())
        except Exception:
            ok = False
        self.samples += 1
        if ok:
            self.held += 1
            if self._run_start is None:
                self._run_start = now
            self._longest = max(self._longest, now - self._run_start)
        else:
            self._run_start = None
