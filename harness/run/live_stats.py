"""Counters of a run while it goes, read from what the processes are already writing.

The lease calls and their outcomes — calls started, acquires won, lost and unknown, releases that
found nothing — come from the slot board (``RUN_DIR/slots.bin``, ``leasecheck.harness.run.slot_board``):
each slot counts its own as its calls return, in shared memory, and ``sample()`` sums a few bytes
per slot. The job runs that overlapped and the faults come from the history: every worker (and
the harness, for faults) appends JSON lines to ``RUN_DIR/history.d/*.jsonl``, each in the file as
it is made (``leasecheck.harness.record.history``: a file ends at its first zero byte, where its
writer's reservation begins). ``LiveStats.sample()`` reads only the bytes
added since its last call, a megabyte at a time, and finds the job lines with one regular
expression over the chunk, in the writer's shape, or else parses them one by one; fault lines are
looked for in the harness's own file. The harness runs this beside the workers, every few seconds
(a terminal's block four times a second): ``bench/live_progress.py`` measures its share of a
core, and nothing is added to the workers' path but a counter per call on the board.

Without a board (a history replayed by ``bench/live_progress.py``, a test) the calls and their
outcomes are counted in the history too, by fixed byte strings (``"type":"ok"``,
``"f":"acquire"``) with ``bytes.count``; should a line's fields come in another order than the
writer's, the acquire lines are picked out one by one, as the rarer fault lines and releases that
returned false always are. Either way the counts are the same (``tests/harness/test_live_progress.py``).

What it can count is what the *workers* reported, not what the checker will conclude: a release
that reported finding nothing, job runs of one key that overlapped, acquires won and lost. A
foreign release needs the store's audit and is known only after the check.
"""
from __future__ import annotations

import mmap
import os
import re
import threading
from bisect import bisect_right
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import FunctionType
from typing import Any

from orjson import dumps, loads

try:    # built with the compiled modules (setup.py); used only by them (``_native_jobs``)
    from leasecheck import _jobscan
except ImportError:
    _jobscan = None

from leasecheck.events import (
    ACQUIRE, F_EFFECT, FAIL, FAULT_START, INFO, INVOKE, JOB_END, JOB_START, LATE_SENT, OK, RELEASE, TIME, TYPE,
    token)
from leasecheck.harness.run.slot_board import totals
from leasecheck.rundir import HARNESS_PART, part_name

# The tokens ``"name":value`` as the history writes them (``leasecheck.events.token``: the writer's
# own encoder), found with ``bytes.count`` / ``bytes.find`` / ``in`` (C scans): a regular expression
# or a JSON parse of every line costs several times more. Nothing depends on the order of a line's
# fields: a line is told by the tokens it contains, wherever they are.
_T_INVOKE, _T_OK, _T_FAIL, _T_INFO = (token(TYPE, t) for t in (INVOKE, OK, FAIL, INFO))
_F_ACQUIRE, _F_RELEASE, _F_EFFECT = (token("f", f) for f in (ACQUIRE, RELEASE, F_EFFECT))
_VALUE_FALSE = token("value", False)
_T_JOB = token(TYPE, "job_")[:-1]         # "type":"job_ : job_start, job_end
_T_FAULT = token(TYPE, "fault_")[:-1]     # "type":"fault_ : fault_start, fault_end, fault_not_fired
# The fast way to count acquire outcomes: the pair ``"type":"ok","f":"acquire"`` as the harness's
# writer puts them today (type, then f). Its counts are used only when they account for every
# ``"f":"acquire"`` in the chunk (so every acquire line has that shape); otherwise the acquire
# lines are picked out one by one (``_acquire_outcomes``), whatever the order of their fields.
_PAIR = {kind: b"%s,%s" % (token(TYPE, kind), _F_ACQUIRE) for kind in (INVOKE, OK, FAIL, INFO, LATE_SENT)}

# Job events are put in time order across files only once every file has had the time to show
# the events before them (a line is in the file as it is made, but a writer that cannot map its
# file writes every 50 ms, and a loaded machine delays either): later events may still be on their way.
ORDER_DELAY_NS = 300_000_000
CHUNK = 1 << 20      # bytes read (and counted) at a time
# The first read of each file per sample: a writer's file holds megabytes of zero bytes ahead of
# its lines (its reservation), so a sample reads at most this much of them per file.
FIRST_READ = 1 << 16
_HARNESS_FILE = part_name(HARNESS_PART)    # the harness's own part: run start and end, the faults


@dataclass
class Snapshot:
    """The counts at one instant (``elapsed_s`` since the run's start)."""
    elapsed_s: float = 0.0
    calls: int = 0                  # lease calls started (acquire, release, renew)
    acquires_won: int = 0
    acquires_lost: int = 0          # the acquire returned False: someone else held the key
    acquires_unknown: int = 0       # the acquire raised: its outcome is unknown
    found_nothing: int = 0          # releases that returned False
    overlaps: int = 0               # job runs that started while another run of the key was going
    faults_active: list[str] = field(default_factory=list)   # "pause:holder" ...
    faults_done: int = 0


class LiveStats:
    """``LiveStats(run_dir / "history.d", board=run_dir / "slots.bin")``; ``sample(now_ns)`` with the
    history clock's time. Without ``board``, or until its file is there, the calls and their
    outcomes are counted in the history."""

    def __init__(self, parts_dir: Path, board: Path | None = None):
        self.parts_dir = Path(parts_dir)
        self.board_path = Path(board) if board is not None else None
        self._board: Any = None                          # the board, mapped once its file is there
        self._lock = threading.Lock()
        self._files: dict[str, tuple[int, int, bytes]] = {}   # name -> (fd, bytes read, partial last line)
        self._jobs: list[tuple[int, int, bytes]] = []    # (time, +1/-1, key) not yet replayed
        self._running: dict[bytes, int] = {}             # key (as the history encodes it) -> runs going
        self._faults: dict[object, str] = {}    # a fault's number (as its events give it) -> "fault:target"
        self.snap = Snapshot()

    def sample(self, now_ns: int, final: bool = False) -> Snapshot:
        """Read what was appended since the last call and return the counts so far; ``final``:
        the processes have stopped writing, so every job event can be put in order."""
        with self._lock:
            board = self._board if self._board is not None else self._map_board()
            for name, chunk in self._read_new():
                # with a board the calls are its counts, and faults are only in the harness's own file
                self._count(chunk, calls=board is None, faults=board is None or name == _HARNESS_FILE)
            self._order_jobs(float("inf") if final else now_ns - ORDER_DELAY_NS)
            s = self.snap
            if board is not None:
                s.calls, s.acquires_won, s.acquires_lost, s.acquires_unknown, s.found_nothing = totals(board)
            s.elapsed_s = now_ns / 1e9
            s.faults_active = sorted(self._faults.values())
            return replace(s, faults_active=list(s.faults_active))

    def close(self) -> None:
        with self._lock:
            for fd, _, _ in self._files.values():
                os.close(fd)
            self._files.clear()
            if self._board is not None:
                self._board.close()
                self._board = None

    def _map_board(self) -> Any:
        """The board's file mapped for reading (it stays readable once the runner removes the file
        at the end); None while there is none."""
        if self.board_path is None:
            return None
        try:
            fd = os.open(self.board_path, os.O_RDONLY)
        except OSError:
            return None
        try:
            size = os.fstat(fd).st_size
            if size:
                self._board = mmap.mmap(fd, size, access=mmap.ACCESS_READ)
        except (OSError, ValueError):
            pass
        finally:
            os.close(fd)
        return self._board

    # -- reading -------------------------------------------------------------------------
    def _read_new(self):
        try:
            names = [n for n in os.listdir(self.parts_dir) if n.endswith(".jsonl")]
        except OSError:   # merged and removed at the end of the run: keep the last counts
            names = []
        for name in names:
            if name not in self._files:
                try:
                    self._files[name] = (os.open(self.parts_dir / name, os.O_RDONLY), 0, b"")
                except OSError:
                    continue
        for name, (fd, offset, pending) in list(self._files.items()):
            # a megabyte at a time: each chunk is scanned several times (``_count``), and one that
            # fits in the CPU's caches is scanned several times faster than the whole read at once
            want = FIRST_READ    # the file's reservation ahead: read it a little at a time
            while True:
                try:
                    block = os.pread(fd, want, offset)
                except OSError:
                    block = b""
                want = CHUNK
                # A writer's file ends at its first zero byte: the rest of its reservation, where
                # the next lines will be copied (leasecheck.harness.record.history)
                zero = block.find(0)
                if zero >= 0:
                    block = block[:zero]
                if not block:
                    break
                offset += len(block)
                text = pending + block if pending else block
                cut = text.rfind(b"\n") + 1           # a line still being written waits for the next block
                pending = text[cut:]
                self._files[name] = (fd, offset, pending)
                if cut:
                    yield name, text[:cut] if cut < len(text) else text
                if zero >= 0:
                    break

    def _count(self, chunk: bytes, calls: bool, faults: bool) -> None:
        """The chunk's job events always; its lease calls and their outcomes with ``calls``, its
        fault lines with ``faults``."""
        s = self.snap
        if calls:
            # lease calls started: every invoke but a job's write to the --sink (rare: looked at one by one)
            s.calls += chunk.count(_T_INVOKE) - sum(_T_INVOKE in line for line in _lines_with(chunk, _F_EFFECT))
            won, lost, unknown = _acquire_outcomes(chunk)
            s.acquires_won += won
            s.acquires_lost += lost
            s.acquires_unknown += unknown
            for line in _lines_with(chunk, _VALUE_FALSE):     # rarer than the release lines
                if _F_RELEASE in line and _T_OK in line:       # the release deleted nothing
                    s.found_nothing += 1
        self._jobs += _jobs(chunk)
        if faults:
            for line in _lines_with(chunk, _T_FAULT):
                self._fault(line)

    def _fault(self, line: bytes) -> None:
        try:
            event = loads(line)
        except ValueError:
            return
        if not isinstance(event, dict):
            return
        n = event.get("n")
        if event.get(TYPE) == FAULT_START:
            self._faults[n] = f"{event.get('fault')}:{event.get('target')}"
        elif self._faults.pop(n, None) is not None:
            self.snap.faults_done += 1

    def _order_jobs(self, upto_ns: float) -> None:
        """Replay job starts and ends older than ``upto_ns`` in time order (an end before a start
        at the same instant), counting each start that finds another run of its key going. (One
        sort of what came since the last replay: each file's events are already in order, and a
        sort of a few ordered runs merges them.)"""
        jobs = self._jobs
        jobs.sort()
        cut = bisect_right(jobs, (upto_ns, 2))    # every (t, delta, key) with t <= upto_ns
        running, overlaps = self._running, 0
        for i in range(cut):
            _, delta, key = jobs[i]
            going = running.get(key, 0)
            if delta > 0 and going > 0:
                overlaps += 1
            running[key] = going + delta if going + delta > 0 else 0
        self.snap.overlaps += overlaps
        del jobs[:cut]


def _acquire_outcomes(chunk: bytes) -> tuple[int, int, int]:
    """How many acquires in ``chunk`` returned true (ok), false (fail), or raised (info)."""
    pairs = {kind: chunk.count(pair) for kind, pair in _PAIR.items() if kind != LATE_SENT}
    acquires = chunk.count(_F_ACQUIRE)
    if sum(pairs.values()) != acquires:     # a late command of an acquire (rare) is the other acquire line
        pairs[LATE_SENT] = chunk.count(_PAIR[LATE_SENT])
    if sum(pairs.values()) == acquires:     # every acquire line is type-then-f
        return pairs[OK], pairs[FAIL], pairs[INFO]
    lines = b"\n".join([line for line in chunk.split(b"\n") if _F_ACQUIRE in line])
    return lines.count(_T_OK), lines.count(_T_FAIL), lines.count(_T_INFO)


def _lines_with(chunk: bytes, needle: bytes):
    """The whole lines of ``chunk`` that contain ``needle`` (found with ``bytes.find``)."""
    at = chunk.find(needle)
    while at >= 0:
        start = chunk.rfind(b"\n", 0, at) + 1
        end = chunk.find(b"\n", at)
        end = len(chunk) if end < 0 else end
        yield chunk[start:end]
        at = chunk.find(needle, end)


def _jobs(chunk: bytes) -> list[tuple[int, int, bytes]]:
    """``(time, +1 for a start / -1 for an end, key)`` of each job line of ``chunk``. One scan finds
    the lines as the history's writer puts them (``_JOB_LINE``); when it found fewer than there are
    job type tokens, some line is in another shape, and each line with the token is looked at
    (``_parsed_job``). The key is kept as the history encodes it (``orjson``), which names the same
    key either way."""
    native = _NATIVE_JOBS
    if native is not None:
        quick = native(chunk)
        if quick is not None:
            return quick
    found = _JOB_LINE.findall(b"\n" + chunk)
    if len(found) == chunk.count(_T_JOB):
        return [(int(t), 1 if kind == b"start" else -1, key) for t, kind, key in found]
    out = []
    for line in chunk.split(b"\n"):
        if _T_JOB in line:
            job = _parsed_job(line)
            if job is not None:
                out.append(job)
    return out


# A job line as the writer puts it (``leasecheck.harness.record.history``), at a line's start: the
# type right after the process, the key right after the attempt, no escaped character in any of them.
_JOB_LINE = re.compile(rb'\n\{"time":(\d+),"process":"[^"\\\n]*","type":"job_(start|end)",'
                       rb'"attempt":"[^"\\\n]*","key":"([^"\\\n]*)"')


def _native_jobs() -> Any:
    """``leasecheck._jobscan.jobs`` — what ``_JOB_LINE`` finds, in one pass of C, or None where a
    line is in another shape — where this module runs compiled and setup.py built it; else None."""
    compiled = not isinstance(_native_jobs, FunctionType)
    return _jobscan.jobs if compiled and _jobscan is not None else None


# (not `Final`: tests compare it with the regular expression's reading)
_NATIVE_JOBS: Any = _native_jobs()


def _parsed_job(line: bytes) -> tuple[int, int, bytes] | None:
    """``_job_in_place`` of a line in another shape: decoded; None for a line that is not a job
    start or end (or not JSON)."""
    try:
        e = loads(line)
        kind, t, key = e[TYPE], e[TIME], e["key"]
    except (ValueError, TypeError, KeyError, IndexError):
        return None
    if kind not in (JOB_START, JOB_END) or type(t) is not int:
        return None
    return t, 1 if kind == JOB_START else -1, dumps(key if isinstance(key, str) else str(key))[1:-1]
