"""Who holds a claim right now, and which lease call each slot is inside, as the workers report
it on their stdout.

A slot prints ``hold <process>`` after a successful acquire and ``free <process>`` after its
release; ``in <call> <process>`` just before it invokes ``acquire``/``release``/``renew`` and
``out <process>`` when the call returns (one short line each: a pipe write, no extra channel).
The runner feeds those lines here. Used only to aim faults (``pause:holder``,
``pause:releaser`` ...), never by the checker, which works from the history and the audit alone.
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
        self._calls: dict[str, tuple[str, int, float]] = {}  # "w3.s0" -> (call, its number, since)
        self._entered = 0                      # lease calls entered so far (numbers them)
        self.rng = rng or random.Random()

    def update(self, line: str) -> None:
        parts = line.split()
        if len(parts) == 3 and parts[0] == "in":
            with self._lock:
                self._entered += 1
                self._calls[parts[2]] = (parts[1], self._entered, time.monotonic())
                self._lock.notify_all()
            return
        if len(parts) != 2:
            return
        with self._lock:
            if parts[0] == "hold":
                self._holding[parts[1]] = time.monotonic()
                self._lock.notify_all()
            elif parts[0] == "free":
                self._holding.pop(parts[1], None)
            elif parts[0] == "out":
                self._calls.pop(parts[1], None)

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


    def wait_for_call(self, call: str, timeout_s: float) -> tuple[str, int] | None:
        """A slot inside ``call`` now (the one that entered it last), as (process, call number),
        waiting up to ``timeout_s`` for one; the number tells this call from the slot's next."""
        deadline = time.monotonic() + timeout_s
        with self._lock:
            while True:
                inside = {p: v for p, v in self._calls.items() if v[0] == call}
                if inside:
                    process = max(inside, key=lambda p: inside[p][1])
                    return process, inside[process][1]
                left = deadline - time.monotonic()
                if left <= 0:
                    return None
                self._lock.wait(left)

    def still_in(self, process: str, number: int) -> bool:
        """Whether ``process`` has not yet reported the end of its call number ``number``."""
        with self._lock:
            now = self._calls.get(process)
            return now is not None and now[1] == number


def worker_index(process: str) -> int:
    """``"w3.s0"`` -> 3."""
    return int(process.split(".")[0][1:])


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
