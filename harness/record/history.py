"""Recording the history: one JSON Lines file per process, flushed at least every 100 ms.

The event schema and its timing rules are in ``docs/history.md``. Times are nanoseconds since
the run's start on ``CLOCK_MONOTONIC``, read under the writer's lock so each file is in time
order. A background thread writes buffered lines every 50 ms; a process killed with SIGKILL
loses at most that much, and at worst leaves a torn last line, which the checker tolerates.

A line is ``leasecheck.events.encode_event`` of ``leasecheck.events.event(time, process, type,
**fields)``: the same names and encoding the checker's reader expects (``orjson``, compact: a
worker writes three to four events per lease call, and the standard encoder was the largest cost a
worker adds to a bare client loop).

A write the file system refuses (out of disk, read-only: `writes.unwritable`) is noted
(`writes.note`), not raised: the writer keeps no more events (``failed``) and calls ``on_fail``
once — the worker stops its slots, the runner stops the run.
"""
from __future__ import annotations

import os
import threading
import time

import orjson

from leasecheck.events import PROCESS, TIME, TYPE, encode_event
from leasecheck.harness.record import writes

_dumps, _OPT = orjson.dumps, orjson.OPT_NON_STR_KEYS   # encode_event's encoder, looked up once
_clock = time.monotonic_ns

FLUSH_INTERVAL_S = 0.05


class HistoryWriter:
    """Append events for one process. Thread-safe; ``close()`` flushes and stops the flusher."""

    def __init__(self, path: os.PathLike, t0_ns: int | None = None, on_fail=None):
        self.path = path
        self._fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        self.failed: OSError | None = None     # the write the file system refused
        self._on_fail = on_fail
        self._lock = threading.Lock()
        self._buf: list[bytes] = []
        self.t0_ns = t0_ns if t0_ns is not None else time.monotonic_ns()
        self._closed = threading.Event()
        self._flusher = threading.Thread(target=self._flush_loop, name="history-flush", daemon=True)
        self._flusher.start()

    def now(self) -> int:
        return time.monotonic_ns() - self.t0_ns

    def record(self, process: str, type: str, **fields) -> int:
        """Stamp and queue one event (``type``: a ``leasecheck.events`` name, ``fields`` as
        ``leasecheck.events.EVENTS`` lists them); returns its time."""
        with self._lock:
            t = _clock() - self.t0_ns
            # encode_event(leasecheck.events.event(t, process, type, **fields)), inlined: the
            # workers' hot path (three to four events per lease call)
            if self.failed is None:
                e = {TIME: t, PROCESS: process, TYPE: type, **fields}
                try:
                    line = _dumps(e, option=_OPT)
                except TypeError:   # what orjson refuses: encode_event's fallback
                    line = encode_event(e)
                self._buf.append(line)
        return t

    def flush(self) -> None:
        with self._lock:
            if not self._buf:
                return
            self._buf.append(b"")
            data = b"\n".join(self._buf)
            self._buf.clear()
            view = memoryview(data)
            try:
                while view:
                    n = os.write(self._fd, view)
                    view = view[n:]
            except OSError as e:
                if not writes.unwritable(e):
                    raise
                self.failed = e
                writes.note(self.path, e)
            else:
                return
        if self._on_fail is not None:
            self._on_fail(self.failed)

    def _flush_loop(self) -> None:
        # A plain sleep, not Event.wait: the flusher wakes 20 times a second in every worker
        # (64 workers: 1,280 wakes/s on two cores), and a timed Event.wait costs half as much
        # again as a sleep. close() waits at most one interval for the loop to notice.
        while not self._closed.is_set():
            time.sleep(FLUSH_INTERVAL_S)
            if self._buf:
                self.flush()

    def close(self) -> None:
        if self._closed.is_set():
            return
        self._closed.set()
        self._flusher.join()
        self.flush()
        os.close(self._fd)

