"""Read a run's history (see docs/history.md): the reader; the only checker module besides
`audit` and `rundir` that touches files.

`HistoryStream(run_dir)` yields the events one at a time, so checking a long history never holds
it in memory. It prefers the merged `history.jsonl`. Without it (a killed run), it merges
`history.d/*.jsonl` as it goes: each file is in time order, so a k-way merge by (`time`, file
order) gives the whole history; nothing is written. Events get `index` (their 0-based position)
when they lack it. `load_history` is the same, as a list.

Damage is tolerated and reported, never hidden: a file's last line that is not valid JSON is a
torn write ("history.d/w3.jsonl:120: torn last line (run was killed?)"); a bad line anywhere else
is skipped and reported with its file and line number. No history at all, or one without a single
event, raises `HistoryError`.
"""
from __future__ import annotations

import builtins
import ctypes
import ctypes.util
import heapq
import os
import re
import shutil
from pathlib import Path
from types import FunctionType
from typing import Any, Generator, Iterator

from orjson import loads as _loads   # parses the history several times faster than the standard library

from leasecheck.checkers.errors import HistoryError
from leasecheck.checkers.read.records import (INDEX as _INDEX, TIME as _TIME, UNSET as _UNSET, decode as _decode_record,
                                              decode_head as _decode_head, row as _row)
from leasecheck.events import INDEX, TIME, TYPE, encode_merged, parse_event as _parse_event
from leasecheck.rundir import HISTORY as MERGED, HISTORY_PARTS as PARTS, PART_SUFFIX

try:    # built with the compiled modules (setup.py); used only by them (``_native_record``)
    from leasecheck import _historyline
except ImportError:
    _historyline = None


def _open_file(file, *args, **kw):
    """`builtins.open`, looked up when called."""
    return builtins.open(file, *args, **kw)


# `open` as a variable of this module that calls `builtins.open` when called, also where setup.py
# compiles the module (compiled, a builtin would be taken straight from builtins once): tests count
# the files the checker opens by replacing either.
open = _open_file  # noqa: A001

# A line of only these is skipped: ASCII whitespace (``bytes.strip()``'s), and the zero bytes a writer
# that died before closing its file leaves after its last line, the rest of its reservation
# (leasecheck.harness.record.history): read as the file's end, not as a torn line.
_BLANK_OR_ZERO = b" \t\n\r\x0b\x0c\0"

_SCAN_CHUNK = 1 << 20      # `scan` reads this much at a time: its memory, whatever the file's size


def _native_record() -> Any:
    """``leasecheck._historyline.record`` — a common line read as its record's tuple in one pass
    of C, where `row(decode(line))` makes the same in two steps — where this module runs compiled
    and setup.py built it with the compiled modules; else None (the pure-Python checker is all
    Python, as the benchmark measures it)."""
    compiled = not isinstance(_native_record, FunctionType)
    return _historyline.record if compiled and _historyline is not None else None


# (not `Final`: read once per file, and tests count the lines it reads by replacing it)
_NATIVE: Any = _native_record()


class HistoryStream:
    """Iterate a run's history in history order. `problems` fills up as lines are read;
    `bytes_read` of `total_bytes` measures progress. With `parts_only`, `history.jsonl` is
    ignored (that is what `write_merged` merges). Raises `HistoryError` at the end of the
    iteration when no event was found at all. `scan` keeps the merged file open for the pass after
    it, so a look-ahead and the pass that follows open the file once."""

    def __init__(self, run_dir, parts_only: bool = False) -> None:
        self.run = Path(run_dir)
        self.parts_only = parts_only
        self._kept: Any = None  # the merged file, opened by `scan`, for the next pass to read
        self.problems: list[str] = []
        self.bytes_read = 0
        merged = self.run / MERGED
        self.total_bytes = (merged.stat().st_size if merged.is_file() and not parts_only
                            else sum(p.stat().st_size for p in _part_files(self.run)))

    def __iter__(self) -> Iterator[dict]:
        return self._events(False)

    def records(self) -> "Records":
        """The same history, its common lines as their records' tuples (`records`: `records.ROW`)
        instead of dicts: what the checker's pass reads."""
        return Records(self)

    def _events(self, typed: bool) -> Iterator[Any]:
        merged = self.run / MERGED
        n = 0
        self.problems, self.bytes_read = [], 0     # each pass starts afresh
        if merged.is_file() and not self.parts_only:
            n = yield from self._read(merged, number=True, typed=typed)
            if n:
                return
        parts = _part_files(self.run)
        if not parts:
            where = (f"{MERGED} has no events" if merged.is_file() and not self.parts_only
                     else f"no {MERGED} and no {PARTS}/*{PART_SUFFIX}")
            raise HistoryError(f"no history to check in {self.run}: {where}")
        self.total_bytes = sum(p.stat().st_size for p in parts)
        streams = [((e[TIME], order, e) for e in self._read(path)) for order, path in enumerate(parts)]
        for _, _, event in heapq.merge(*streams, key=lambda x: (x[0], x[1])):
            event.setdefault(INDEX, n)
            n += 1
            yield event
        if not n:
            raise HistoryError(f"no history to check in {self.run}: {PARTS}/*.jsonl hold no events")

    def scan(self, token: bytes) -> list[dict]:
        """The events on lines that contain `token`, found without parsing the others (a quick
        look ahead, e.g. for the run's faults); damaged lines are skipped silently."""
        merged = self.run / MERGED
        use_merged = not self.parts_only and merged.is_file() and merged.stat().st_size > 0
        found: list[dict] = []
        for path in [merged] if use_merged else _part_files(self.run):
            f = self._open(path)
            tail = _scan_file(f, token, found)
            if use_merged:
                f.seek(0)
                self._kept = f          # the pass after this look-ahead reads it from the start
            else:
                f.close()
            if tail:
                _lines_with(tail + b"\n", len(tail) + 1, token, found)
        return found

    def _open(self, path: Path):
        """`path` opened for reading from its start: the file `scan` kept open, when it is that one."""
        kept, self._kept = self._kept, None
        if kept is not None and kept.name == str(path):
            kept.seek(0)
            return kept
        if kept is not None:
            kept.close()
        return open(path, "rb")

    def _read(self, path: Path, number: bool = False, typed: bool = False,
              raw: bool = False) -> Generator[Any, None, int]:
        """The events of one file, damage reported in `problems`; with `number`, each event
        without an `index` gets its position; with `typed`, a line that fits one of the typed
        records (`records`) is that record, any other a dict; with `raw` (what `write_merged`
        reads), `(time, event)` pairs where the event is the line itself (bytes, newline and all)
        when it is a compact JSON object without an `index` (`_Head`), else a dict. Returns how
        many events it yielded.

        The hot loop of the checker: one pass, no layers. A line that does not parse is
        reported once the next non-blank line shows whether it was the last one (a torn write)
        or not (a malformed line)."""
        name = path.relative_to(self.run).as_posix()
        problems = self.problems
        loads = _loads
        last_time = -1 << 200   # before any time
        bad = None              # (line number, reason) of an unparsed line not yet reported
        count = 0
        lineno = 0
        line: bytes          # (typed, for the compiled build: bytes operations, not generic ones)
        decode = _decode_record
        head = _decode_head
        unset = _UNSET
        native = _NATIVE
        as_row = _row
        with self._open(path) as f:
            for line in f:
                lineno += 1
                self.bytes_read += len(line)
                rec: Any = None
                if typed:
                    if native is not None:
                        rec = native(line)
                    if rec is None:
                        try:
                            # (a job event that names a call does not decode: `records.Job`)
                            rec = as_row(decode(line))
                        except Exception:  # noqa: BLE001 - not one of the records: read as a dict below
                            rec = None
                elif raw:
                    h: Any = None
                    try:
                        h = head(line)
                    except Exception:  # noqa: BLE001 - not one: read as a dict below
                        h = None
                    if h is not None and h.index is unset and line.endswith(b"}\n"):
                        rec = line
                        t = h.time
                if rec is not None:
                    if not raw:
                        event, t = rec, rec[_TIME]
                    else:
                        event = rec
                else:
                    try:
                        event = loads(line)
                    except Exception:  # noqa: BLE001 - told apart below by _parse_event
                        event = None
                    if type(event) is not dict or type(t := event.get(TIME)) is not int \
                            or type(event.get(TYPE)) is not str:
                        if not line.strip(_BLANK_OR_ZERO):
                            continue
                        if bad is not None:
                            problems.append(f"{name}:{bad[0]}: malformed line skipped ({bad[1]})")
                            bad = None
                        try:
                            event = _parse_event(line)
                        except ValueError as e:
                            bad = (lineno, e)
                            continue
                        t = event[TIME]
                if bad is not None:       # (an earlier line that did not parse, and this one did)
                    problems.append(f"{name}:{bad[0]}: malformed line skipped ({bad[1]})")
                    bad = None
                if line[-1] != 10:     # (no line from the file is empty: `line[-1:] != b"\n"`)
                    problems.append(f"{name}:{lineno}: last line has no newline (kept: it is complete JSON)")
                if t < last_time:
                    problems.append(f"{name}:{lineno}: time goes backwards ({t} < {last_time})")
                last_time = t
                if number:
                    if rec is not None:
                        if rec[_INDEX] is unset:
                            event = rec = rec[:_INDEX] + (count,) + rec[_INDEX + 1:]
                    elif INDEX not in event:
                        event[INDEX] = count
                count += 1
                if raw:
                    yield (t, event)
                else:
                    yield event
        if bad is not None:
            problems.append(f"{name}:{bad[0]}: torn last line (run was killed?)")
        return count


class Records:
    """`HistoryStream.records()`: iterating it reads the stream's history with typed records
    (each pass afresh, as the stream's own); `stream` is the stream (its problems and progress)."""

    def __init__(self, stream: HistoryStream) -> None:
        self.stream = stream

    def __iter__(self) -> Iterator[Any]:
        return self.stream._events(True)


def load_history(run_dir) -> tuple[list[dict], list[str]]:
    """Return `(events, problems)` for the run in `run_dir`, in history order, all in memory.

    Raises `HistoryError` when neither `history.jsonl` nor `history.d/` holds any event.
    """
    stream = HistoryStream(run_dir)
    events = list(stream)
    return events, stream.problems


def write_merged(run_dir, drop_parts: bool = False) -> list[str]:
    """Merge `history.d/*.jsonl` into `history.jsonl` (with `index`); return the problems found.

    The file is written to a temporary name, fsynced and renamed, so a reader never sees half of
    it. With `drop_parts`, `history.d/` is removed once the merged file is on disk: a run keeps
    its history once (a run killed before this point keeps `history.d/`, which the reader merges).
    Raises `HistoryError` when `history.d/` holds no events, and the `OSError` of a file system
    that refuses the write (no temporary file is left; `history.d/` is kept).
    """
    run = Path(run_dir)
    stream = HistoryStream(run, parts_only=True)
    parts = _part_files(run)
    tmp = run / (MERGED + ".tmp")
    try:
        n = 0
        with open(tmp, "wb") as out:
            # Each part is in time order: a k-way merge by (time, file order, line). A line that is
            # a JSON object ending in "}" without an index is copied with `,"index":N` spliced in
            # before that brace (its fields and their encoding as the writer wrote them); any
            # other is parsed and written again (`encode_merged`).
            streams = [((t, order, i, e) for i, (t, e) in enumerate(stream._read(path, raw=True)))
                       for order, path in enumerate(parts)]
            write = out.write
            for _, _, _, event in heapq.merge(*streams):
                if type(event) is bytes:
                    write(b"%s,\"index\":%d}\n" % (event[:-2], n))
                else:
                    event.setdefault(INDEX, n)
                    write(encode_merged(event).encode() + b"\n")
                n += 1
            out.flush()
            os.fsync(out.fileno())
        if not n:
            raise HistoryError("no events")
    except HistoryError:
        tmp.unlink(missing_ok=True)
        raise HistoryError(f"cannot merge the history of {run}: {PARTS}/*.jsonl hold no events") from None
    except OSError:
        tmp.unlink(missing_ok=True)    # out of disk: history.d/ stays, which the reader merges
        raise
    os.replace(tmp, run / MERGED)
    if drop_parts:
        _fsync_dir(run)                # the rename is durable before the parts go
        shutil.rmtree(run / PARTS, ignore_errors=True)   # left over: the reader prefers the merged file
    return stream.problems


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _part_files(run: Path) -> list[Path]:
    """The per-process files in a stable order: harness, then w0, w1, ..., w10 (numbers as numbers)."""
    def natural(p: Path):
        return [int(s) if s.isdigit() else s for s in re.split(r"(\d+)", p.name)]
    return sorted((run / PARTS).glob("*" + PART_SUFFIX), key=natural)


def _scan_file(f: Any, token: bytes, found: list[dict]) -> bytes:
    """`scan` of one open file, read `_SCAN_CHUNK` at a time into one buffer (no new bytes
    object per chunk); returns its last line when that has no newline."""
    buf = bytearray(2 * _SCAN_CHUNK)
    kept = 0                    # an unfinished line's bytes, at the start of `buf`
    while True:
        if kept + _SCAN_CHUNK > len(buf):     # a line longer than a chunk: room for it
            buf.extend(bytes(kept + _SCAN_CHUNK - len(buf)))
        with memoryview(buf) as view:
            n = f.readinto(view[kept:kept + _SCAN_CHUNK])
        if not n:
            return bytes(buf[:kept])
        total = kept + n
        end = buf.rfind(b"\n", 0, total) + 1
        _lines_with(buf, end, token, found)
        kept = total - end
        buf[:kept] = buf[end:total]


def _lines_with(buf: Any, end: int, token: bytes, found: list[dict]) -> None:
    """Parse each line of `buf[:end]` (whole lines, bytes or a bytearray) that holds `token` into `found`."""
    i = _find(buf, token, 0, end)
    while i != -1:
        start, stop = buf.rfind(b"\n", 0, i) + 1, buf.find(b"\n", i)
        try:
            found.append(_parse_event(bytes(buf[start:stop])))
        except ValueError:
            pass
        i = _find(buf, token, stop, end)


def _libc_memmem() -> Any:
    """The C library's ``memmem``, or None where ctypes cannot find it."""
    try:
        name = ctypes.util.find_library("c")
        fn = ctypes.CDLL(name).memmem if name else None
    except (OSError, AttributeError):
        return None
    if fn is not None:
        fn.restype = ctypes.c_void_p
        fn.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_char_p, ctypes.c_size_t]
    return fn


# The look-ahead's search through a chunk: the C library's memmem finds a token in a megabyte of
# history about three times as fast as `bytes.find` (a tenth of a second less per 160 MB).
_memmem: Any = _libc_memmem()


def _find(buf: Any, token: bytes, start: int, end: int) -> int:
    """`buf.find(token, start, end)`, with memmem for a bytearray where the C library has it."""
    fn = _memmem
    if fn is None or type(buf) is not bytearray or end - start < 4096 or start < 0:
        return buf.find(token, start, end)
    # (one character at the buffer's start, for its address: an array type of `end` characters
    # would be a new type per size, each a reference cycle; released below, as `buf` may be
    # resized later)
    view = ctypes.c_char.from_buffer(buf)
    try:
        base = ctypes.addressof(view)
        at = fn(base + start, end - start, token, len(token))
        return -1 if at is None else at - base
    finally:
        del view
