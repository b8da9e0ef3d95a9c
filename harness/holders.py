"""Who holds a claim right now, as the workers report it on their stdout.

A slot prints ``hold <process>`` after a successful acquire and ``free <process>`` after its
release; the runner feeds those lines here. Used only to aim faults (``pause:holder``), never
by the checker, which works from the history and the audit alone.
"""
from __future__ import annotations

import os
import random
import selectors
import threading
import time


class HolderTable:
    def __init__(self, rng: random.Random | None = None):
        self._lock = threading.Condition()
        self._holding: dict[str, float] = {}   # "w3.s0" -> when it started holding
        self.rng = rng or random.Random()

    def update(self, line: str) -> None:
        parts = line.split()
        if len(parts) != 2:
            return
        with self._lock:
            if parts[0] == "hold":
                self._holding[parts[1]] = time.monotonic()
                self._lock.notify_all()
            elif parts[0] == "free":
                self._holding.pop(parts[1], None)

    def holders(self) -> list[int]:
        """Worker indexes with at least one slot holding a claim."""
        with self._lock:
            return sorted({int(p.split(".")[0][1:]) for p in self._holding})

    def wait_for_holder(self, timeout_s: float) -> int | None:
        """A worker holding a claim now (the most recent claimer), waiting up to ``timeout_s``."""
        deadline = time.monotonic() + timeout_s
        with self._lock:
            while not self._holding:
                left = deadline - time.monotonic()
                if left <= 0:
                    return None
                self._lock.wait(left)
            newest = max(self._holding, key=self._holding.get)
            return int(newest.split(".")[0][1:])


def pump(streams: list, table: HolderTable, stop: threading.Event, replies=None) -> None:
    """Read worker stdout lines (binary pipes) into ``table`` until every stream closes or
    ``stop`` is set. Reading never stops early on its own, so a worker never blocks on a full
    pipe while it runs. Answers to the harness's questions go to ``replies``
    (``harness.replies.Replies``), stamped with the wall clock when they were read."""
    sel = selectors.DefaultSelector()
    pending: dict[int, bytes] = {}
    for s in streams:
        sel.register(s.fileno(), selectors.EVENT_READ)
        pending[s.fileno()] = b""
    try:
        while sel.get_map() and not stop.is_set():
            for key, _ in sel.select(0.1):
                fd = key.fileobj
                try:
                    chunk = os.read(fd, 65536)
                except OSError:
                    chunk = b""
                received_ns = time.time_ns()
                if not chunk:
                    sel.unregister(fd)
                    continue
                *lines, pending[fd] = (pending[fd] + chunk).split(b"\n")
                for line in lines:
                    text = line.decode(errors="replace")
                    if replies is None or not replies.put(text, received_ns):
                        table.update(text)
    finally:
        sel.close()
