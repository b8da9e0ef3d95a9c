"""Recording the history: one JSON Lines file per process, each line in the file as it is made.

The event schema and its timing rules are in ``docs/history.md``. Times are nanoseconds since
the run's start on ``CLOCK_MONOTONIC``, read under the writer's lock so each file is in time
order.

A regular file is written through a shared memory map of it (``mmap``): each line is copied into
the file's pages as it is formatted, so a reader sees it at once and a process killed with
SIGKILL loses nothing but, at worst, the line it was copying (a torn last line, which the checker
tolerates: docs/history.md, "Run directory"). The file is reserved ahead of the lines
(``posix_fallocate``, ``RESERVE`` at a time: a full disk refuses the reservation, never a store
into the map) and cut to its lines at ``close``; a process that died before closing leaves the
rest of its reservation as zero bytes after its last line, which readers take as the end of the
file. Nothing wakes to write: no thread, no system call per line. (Writing the lines every 50 ms
from a thread of their own woke every worker 20 times a second; with 64 workers on two cores
those wakes and the handing over of the interpreter they need cost more than the lines.)
Where a file cannot be reserved and mapped (a pipe, a device, a file system without
``fallocate``) the lines wait in a buffer that a background thread writes every 50 ms
(``FLUSH_INTERVAL_S``: a process killed then loses at most its last 50 ms).

A line is ``leasecheck.events.encode_event`` of ``leasecheck.events.event(time, process, type,
**fields)``: the same names and encoding the checker's reader expects (``orjson``, compact). A
claim loop writes its own calls and jobs (three to four events per lease call, the workers' hot
path) through ``CallLines``, which formats the same bytes from parts encoded once.

A write the file system refuses (out of disk, read-only: `writes.unwritable`) is noted
(`writes.note`), not raised: the writer keeps no more events (``failed``) and calls ``on_fail``
once — the worker stops its slots, the runner stops the run.
"""
from __future__ import annotations

import mmap
import os
import stat
import threading
import time
import types
from typing import Any, Final

import orjson

try:    # built with the compiled modules (setup.py); used only by them (``_native_sink``)
    from leasecheck import _linewrite
except ImportError:
    _linewrite = None

from leasecheck.events import (
    CALLS, EFFECT, FAIL, INVOKE, JOB_END, JOB_START, OK, PROCESS, TIME, TYPE, encode_event)
from leasecheck.harness.record import writes

# encode_event's encoder and options, looked up once, with the line's newline appended by orjson
# (``Final``: the compiled build reads such a name from a C static instead of the module's dict)
_dumps: Final = orjson.dumps
_OPT: Final = orjson.OPT_NON_STR_KEYS | orjson.OPT_APPEND_NEWLINE
_clock = time.monotonic_ns

FLUSH_INTERVAL_S = 0.05     # unmapped files only
RESERVE = 4 << 20           # bytes reserved (and mapped) ahead of the lines


class HistoryWriter:
    """Append events for one process. Thread-safe; ``close()`` cuts the file to its lines (or
    writes what is buffered) and stops the flusher, if any."""

    def __init__(self, path: os.PathLike, t0_ns: int | None = None, on_fail=None):
        self.path = path
        self._fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o644)
        self.failed: OSError | None = None     # the write the file system refused
        self._on_fail = on_fail
        self._told = False                      # on_fail called
        self._t0 = t0_ns if t0_ns is not None else time.monotonic_ns()
        # Where the next line goes (``pos``, a file offset) and, compiled, the map the slots' lines
        # are written into by C (``leasecheck._linewrite.Sink``, whose lock is then the writer's);
        # run as Python, a ``_Place`` and a threading.Lock.
        self._sink: Any = _new_sink(self._t0)
        # the clock read and the append, in time order
        self._lock: Any = self._sink if _linewrite_sink is not None else threading.Lock()
        self._write_lock = threading.Lock()     # one flush at a time, so buffers land in order
        # Mapped: the map of the file from ``_base`` (a multiple of the page size) to the end of
        # the reservation. Else the lines not yet written, newline-terminated, in one growing
        # buffer: each encoded line is copied in and its bytes object freed at once. (A list of
        # them held each until the flush, and orjson's bytes hold ~4 KB of memory apiece: a worker
        # touched a fresh 4 KB per event.)
        self._map: Any = None
        self._base = self._end = 0
        self._buf = bytearray()
        self._closed = threading.Event()
        self._flusher: threading.Thread | None = None
        if not self._mapped():
            self._flusher = threading.Thread(target=self._flush_loop, name="history-flush", daemon=True)
            self._flusher.start()

    @property
    def mapped(self) -> bool:
        """Whether lines go into the file through its map (else through the 50 ms flusher)."""
        return self._flusher is None

    @property
    def t0_ns(self) -> int:
        """The run's start on ``CLOCK_MONOTONIC`` (ns): an event's time is counted from it."""
        return self._t0

    @t0_ns.setter
    def t0_ns(self, t0: int) -> None:
        self._t0 = t0
        self._sink.t0 = t0

    def now(self) -> int:
        return time.monotonic_ns() - self._t0

    def record(self, process: str, type: str, **fields) -> int:
        """Stamp and queue one event (``type``: a ``leasecheck.events`` name, ``fields`` as
        ``leasecheck.events.EVENTS`` lists them); returns its time."""
        with self._lock:
            t = _clock() - self._t0
            # encode_event(leasecheck.events.event(t, process, type, **fields)), inlined: the
            # workers' hot path (three to four events per lease call)
            if self.failed is None:
                e = {TIME: t, PROCESS: process, TYPE: type, **fields}
                try:
                    line = _dumps(e, option=_OPT)
                except TypeError:   # what orjson refuses: encode_event's fallback
                    line = encode_event(e) + b"\n"
                self._put(line)
        if self.failed is not None:
            self._tell()
        return t

    def calls(self, process: str) -> "CallLines":
        """The writer of ``process``'s lease-call and job events: a claim loop's hot path."""
        return CallLines(self, process)

    # -- where a line goes (under ``_lock``) ------------------------------------------------------
    def _put(self, line: bytes) -> None:
        """Append ``line`` (called with ``_lock`` held, ``failed`` None)."""
        m = self._map
        if m is None:
            if self._flusher is not None:
                self._buf += line
            return
        sink = self._sink
        pos = sink.pos
        end = pos + len(line)
        if end > self._end:
            if not self._reserve(end):
                return
            m = self._map
        m[pos - self._base:end - self._base] = line
        sink.pos = end

    def _mapped(self) -> bool:
        """Reserve and map the file when it is a regular one that takes a reservation (True also
        when the file system refused the first reservation: ``failed``, nothing kept)."""
        try:
            st = os.fstat(self._fd)
        except OSError:
            return False
        if not stat.S_ISREG(st.st_mode) or not hasattr(os, "posix_fallocate"):
            return False    # (not a regular file, or no fallocate on this system: macOS)
        self._sink.pos = self._end = st.st_size     # (a file written before: lines go after it)
        try:
            self._reserve(st.st_size + 1)
        except (OSError, ValueError):   # no fallocate or no mmap here: the flusher writes the lines
            try:
                os.ftruncate(self._fd, st.st_size)  # what was reserved before the map failed
            except OSError:
                pass
            return False
        return True

    def _reserve(self, need: int) -> bool:
        """Grow the reservation to hold ``need`` bytes and map it; False when the file system
        refused (``failed`` set, noted). Other errors raise ``OSError``."""
        new_end = max(need, self._end) + RESERVE
        try:
            os.posix_fallocate(self._fd, self._end, new_end - self._end)
        except OSError as e:
            if not writes.unwritable(e):
                raise
            self._refused(e)
            return False
        pos = self._sink.pos
        base = pos - pos % mmap.ALLOCATIONGRANULARITY
        m = mmap.mmap(self._fd, new_end - base, offset=base)
        self._sink.map(m, base, new_end)     # (letting go of the old map, which can then close)
        if self._map is not None:
            self._map.close()
        self._map, self._base, self._end = m, base, new_end
        return True

    def _refused(self, e: OSError) -> None:
        self.failed = e
        self._sink.map(None)        # no line written into the map from now on
        self._buf = bytearray()     # kept no more
        writes.note(self.path, e)

    def _tell(self) -> None:
        """Call ``on_fail`` once, outside the lock."""
        if self._told or self._on_fail is None:
            return
        self._told = True
        self._on_fail(self.failed)

    def flush(self) -> None:
        """Write the buffered lines (one ``write``, whole lines); the slots keep recording
        meanwhile, into a new buffer. (Mapped, the lines are in the file already.)"""
        with self._write_lock:
            with self._lock:
                if not self._buf:
                    told = self.failed is not None
                    data = None
                else:
                    data, self._buf = self._buf, bytearray()
                    told = False
            if data is not None:
                view = memoryview(data)
                try:
                    while view:
                        n = os.write(self._fd, view)
                        view = view[n:]
                except OSError as e:
                    if not writes.unwritable(e):
                        raise
                    with self._lock:
                        self._refused(e)
                    told = True
        if told:
            self._tell()

    def _flush_loop(self) -> None:
        # A plain sleep, not Event.wait: a timed Event.wait costs half as much again as a sleep.
        # close() waits at most one interval for the loop to notice.
        while not self._closed.is_set():
            time.sleep(FLUSH_INTERVAL_S)
            if self._buf:
                self.flush()

    def close(self) -> None:
        if self._closed.is_set():
            return
        self._closed.set()
        if self._flusher is not None:
            self._flusher.join()
        self.flush()
        with self._lock:
            m, self._map = self._map, None
            self._sink.map(None)
            if m is not None:
                m.close()
                try:
                    os.ftruncate(self._fd, self._sink.pos)     # the reservation's unused rest
                except OSError as e:
                    if not writes.unwritable(e):
                        raise
        os.close(self._fd)


# -- a slot's own events, on its hot path -------------------------------------------------------
_NSK: Final = orjson.OPT_NON_STR_KEYS


def _json(value) -> bytes:
    return _dumps(value, option=_NSK)


def _segments(type: str, *fields: str) -> tuple:
    """The line ``record`` writes for an event of ``type`` with ``fields`` in this order, cut where
    its values go: ``(b'{"time":', b',"process":', b',"type":"ok","f":', ..., b'}\\n')``, the time's
    digits after the first segment and one encoded JSON value (the process's, then each field's)
    after each of the others but the last."""
    segments = [b"{" + _json(TIME) + b":", b"," + _json(PROCESS) + b":"]
    rest = b"," + _json(TYPE) + b":" + _json(type)
    for f in fields:
        segments.append(rest + b"," + _json(f) + b":")
        rest = b""
    segments.append(rest + b"}\n")
    return tuple(segments)


def _template(type: str, *fields: str) -> bytes:
    """``b'{"time":%d,"process":%s,"type":"ok","f":%s,...}\\n'``: ``_segments``'s line as a
    ``%`` template, each ``%s`` an encoded JSON value."""
    segments = [s.replace(b"%", b"%%") for s in _segments(type, *fields)]
    return segments[0] + b"%d" + b"%s".join(segments[1:])


def _native_sink() -> Any:
    """``leasecheck._linewrite.Sink`` (a slot's line stamped and formatted straight into the map, in
    C) where this module runs compiled and the extension was built with it (setup.py); else None:
    where this module runs as Python (``LEASECHECK_PURE_PYTHON``, no compiler, a source edited since
    the build), lines are formatted with the ``%`` templates and stored through a slice of the map."""
    if isinstance(_native_sink, types.FunctionType):     # interpreted: this is the pure-Python build
        return None
    return _linewrite.Sink if _linewrite is not None else None


class _Place:
    """Where a history file's next line goes, run as Python: ``Sink``'s ``pos`` and ``t0``, and a
    ``map`` that keeps nothing (the lines reach the map only through the writer's slices)."""

    def __init__(self, t0: int) -> None:
        self.pos, self.t0 = 0, t0

    def map(self, *_buffer: Any) -> None:
        pass


def _new_sink(t0: int) -> Any:
    """A history file's ``Sink`` (its clock ``_clock`` where a test replaced it), else a ``_Place``."""
    if _linewrite_sink is None:
        return _Place(t0)
    return _linewrite_sink(t0, None if _clock is time.monotonic_ns else _clock)


_INVOKE: Final = _template(INVOKE, "f", "attempt", "key")
_DONE: Final = {kind: _template(kind, "f", "attempt", "key", "value", "sent") for kind in (OK, FAIL)}
_JOB: Final = {kind: _template(kind, "attempt", "key") for kind in (JOB_START, EFFECT)}
_JOB_END: Final = _template(JOB_END, "attempt", "key", "aborted")
# the same lines cut into segments, for the C writer
_INVOKE_SEGMENTS: Final = _segments(INVOKE, "f", "attempt", "key")
_DONE_SEGMENTS: Final = {kind: _segments(kind, "f", "attempt", "key", "value", "sent") for kind in (OK, FAIL)}
_JOB_SEGMENTS: Final = {kind: _segments(kind, "attempt", "key") for kind in (JOB_START, EFFECT)}
_JOB_END_SEGMENTS: Final = _segments(JOB_END, "attempt", "key", "aborted")
# a job of no duration's three lines (``CallLines.instant_job``), its job_end's ``aborted`` false
_INSTANT_JOB: Final = (_JOB_SEGMENTS[JOB_START], _JOB_SEGMENTS[EFFECT],
                       _JOB_END_SEGMENTS[:-2] + (_JOB_END_SEGMENTS[-2] + b"false" + _JOB_END_SEGMENTS[-1],))
_linewrite_sink: Final = _native_sink()
_F: Final = {f: _json(f) for f in CALLS}
_BOOL: Final = {True: b"true", False: b"false"}


class CallLines:
    """One slot's lease calls and jobs (``invoke``, ``ok``/``fail``, ``job_start``, ``effect``,
    ``job_end``) written into its ``HistoryWriter``: the same bytes as ``record`` writes, in the
    same file under the same lock, each line formatted from parts encoded once — the process
    once, a key once, an attempt once for all its events — instead of a dict built and encoded
    per event (three to four events per lease call). ``tests/harness/test_history.py`` pins that
    the lines are ``record``'s. Compiled, each line is stamped and formatted straight into the map
    by one call of the writer's C sink (``_line``: ``leasecheck._linewrite.Sink.line``, the same
    bytes); where it does not fit (or there is no map, or no sink) the line is formatted with the
    ``%`` templates under the lock, and the writer reserves more. What a template cannot write goes
    through ``record``. (Each method spells out the same few lines: this is the workers' hot path,
    and one helper taking each line's values as a tuple ran about 3,000 more instructions per
    operation, 1.3 %, by ``bench/instructions.py``.)"""

    __slots__ = ("_w", "_process", "_p", "_keys", "_attempt", "_a", "_acquire", "_release", "_line", "_lines")

    def __init__(self, writer: HistoryWriter, process: str):
        self._w, self._process, self._p = writer, process, _json(process)
        self._acquire, self._release = writer._lock.acquire, writer._lock.release
        self._line: Any = writer._sink.line if _linewrite_sink is not None else None
        self._lines: Any = writer._sink.lines if _linewrite_sink is not None else None
        self._keys: dict[str, bytes] = {}
        self._attempt: str | None = None
        self._a = b""

    def _key(self, key: str) -> bytes:
        k = self._keys[key] = _json(key)
        return k

    def invoke(self, f: str, attempt: str, key: str) -> int:
        fb = _F.get(f)
        if fb is None:
            return self._w.record(self._process, INVOKE, f=f, attempt=attempt, key=key)
        if attempt is not self._attempt:
            self._attempt, self._a = attempt, _dumps(attempt, option=_NSK)
        k = self._keys.get(key) or self._key(key)
        line = self._line
        if line is not None:
            stamped = line(_INVOKE_SEGMENTS, self._p, fb, self._a, k)
            if stamped is not None:
                return stamped
        w = self._w
        self._acquire()
        try:
            t = _clock() - w._t0
            if w.failed is None:
                w._put(_INVOKE % (t, self._p, fb, self._a, k))
        finally:
            self._release()
        if w.failed is not None:
            w._tell()
        return t

    def done(self, kind: str, f: str, attempt: str, key: str, value, sent: list) -> int:
        """An ``ok`` or ``fail``."""
        segments, fb = _DONE_SEGMENTS.get(kind), _F.get(f)
        if segments is None or fb is None or type(value) is not bool:
            return self._w.record(self._process, kind, f=f, attempt=attempt, key=key, value=value, sent=sent)
        if attempt is not self._attempt:
            self._attempt, self._a = attempt, _dumps(attempt, option=_NSK)
        k = self._keys.get(key) or self._key(key)
        line = self._line
        if line is not None:        # the C sink writes ``sent`` as orjson does (or says it cannot)
            try:
                stamped = line(segments, self._p, fb, self._a, k, _BOOL[value], sent)
            except TypeError:       # a value only orjson writes (or none does): below
                stamped = None
            if stamped is not None:
                return stamped
        try:
            encoded = _dumps(sent, option=_NSK)
        except TypeError:           # what orjson refuses too: record()'s fallback encoder
            return self._w.record(self._process, kind, f=f, attempt=attempt, key=key, value=value, sent=sent)
        w = self._w
        self._acquire()
        try:
            t = _clock() - w._t0
            if w.failed is None:
                w._put(_DONE[kind] % (t, self._p, fb, self._a, k, _BOOL[value], encoded))
        finally:
            self._release()
        if w.failed is not None:
            w._tell()
        return t

    def job(self, kind: str, attempt: str, key: str) -> int:
        """A ``job_start`` or an ``effect`` without fields of its own."""
        if attempt is not self._attempt:
            self._attempt, self._a = attempt, _dumps(attempt, option=_NSK)
        k = self._keys.get(key) or self._key(key)
        line = self._line
        if line is not None:
            stamped = line(_JOB_SEGMENTS[kind], self._p, self._a, k)
            if stamped is not None:
                return stamped
        w = self._w
        self._acquire()
        try:
            t = _clock() - w._t0
            if w.failed is None:
                w._put(_JOB[kind] % (t, self._p, self._a, k))
        finally:
            self._release()
        if w.failed is not None:
            w._tell()
        return t

    def instant_job(self, attempt: str, key: str) -> None:
        """A job of no duration, without a renewal or an effect of its own to write: its
        ``job_start``, ``effect`` and ``job_end`` (not aborted), one after the other — compiled,
        in one call of the writer's C sink (``lines``), else as ``job`` and ``job_end`` write them."""
        many = self._lines
        if many is not None:
            if attempt is not self._attempt:
                self._attempt, self._a = attempt, _dumps(attempt, option=_NSK)
            k = self._keys.get(key) or self._key(key)
            if many(_INSTANT_JOB, self._p, self._a, k) is not None:
                return
        self.job(JOB_START, attempt, key)
        self.job(EFFECT, attempt, key)
        self.job_end(attempt, key, False)

    def job_end(self, attempt: str, key: str, aborted: object) -> int:   # not a bool: through record()
        if type(aborted) is not bool:
            return self._w.record(self._process, JOB_END, attempt=attempt, key=key, aborted=aborted)
        if attempt is not self._attempt:
            self._attempt, self._a = attempt, _dumps(attempt, option=_NSK)
        k = self._keys.get(key) or self._key(key)
        line = self._line
        if line is not None:
            stamped = line(_JOB_END_SEGMENTS, self._p, self._a, k, _BOOL[aborted])
            if stamped is not None:
                return stamped
        w = self._w
        self._acquire()
        try:
            t = _clock() - w._t0
            if w.failed is None:
                w._put(_JOB_END % (t, self._p, self._a, k, _BOOL[aborted]))
        finally:
            self._release()
        if w.failed is not None:
            w._tell()
        return t


class RecordedCalls(CallLines):
    """``CallLines``'s methods over any ``record(process, type, **fields)``: a claim loop's
    history that is not a ``HistoryWriter`` (a test's recorder). A subclass, so that the claim
    loop calls either directly (compiled, setup.py)."""

    def __init__(self, record, process: str):   # no writer: each method goes through ``record``
        self._record, self._process = record, process
        self._lines = None      # (``instant_job``: as ``job`` and ``job_end`` write them)

    def invoke(self, f: str, attempt: str, key: str) -> int:
        return self._record(self._process, INVOKE, f=f, attempt=attempt, key=key)

    def done(self, kind: str, f: str, attempt: str, key: str, value, sent: list) -> int:
        return self._record(self._process, kind, f=f, attempt=attempt, key=key, value=value, sent=sent)

    def job(self, kind: str, attempt: str, key: str) -> int:
        return self._record(self._process, kind, attempt=attempt, key=key)

    def job_end(self, attempt: str, key: str, aborted: object) -> int:
        return self._record(self._process, JOB_END, attempt=attempt, key=key, aborted=aborted)


def calls_of(history, process: str) -> CallLines:
    """``history.calls(process)`` of a ``HistoryWriter``, else ``RecordedCalls`` over its ``record``."""
    calls = getattr(history, "calls", None)
    return calls(process) if callable(calls) else RecordedCalls(history.record, process)
