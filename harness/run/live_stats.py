"""Counters of a run while it goes, read from the history files the processes are already writing.

Every worker (and the harness, for faults) appends JSON lines to ``RUN_DIR/history.d/*.jsonl``
and flushes them every 50 ms (``leasecheck.harness.record.history``). ``LiveStats.sample()`` reads only the bytes
added since its last call and counts fixed byte strings in the whole chunk (``bytes.count``; only
the rarer job, release and fault lines are looked at one by one), so sampling a few times a
second costs the run little, and nothing is added to the workers' path.

What it can count is what the *workers* reported, not what the checker will conclude: a release
that reported finding nothing, job runs of one key that overlapped, acquires won and lost. A
foreign release needs the store's audit and is known only after the check.
"""
from __future__ import annotations

import heapq
import json
import os
import threading
from dataclasses import dataclass, field
from pathlib import Path

# Literal byte strings, counted with ``bytes.count`` / ``bytes.find`` (a fast scan in C): a
# regular expression over every line costs ten times more. The history writes its fields in a
# fixed order ({"time","process","type", then the call's fields}; see ``leasecheck.harness.record.history``).
_WON, _LOST, _UNKNOWN = (b'"type":"%s","f":"acquire"' % kind for kind in (b"ok", b"fail", b"info"))
_INVOKE, _INVOKE_EFFECT = b'"type":"invoke","f":"', b'"type":"invoke","f":"effect"'
_RELEASED = b'"type":"ok","f":"release"'
_JOB, _FAULT = b'"type":"job_', b'"type":"fault_'

# Job events are put in time order across files only once every file has had the time to flush
# past them (a worker flushes every 50 ms): later events may still be on their way.
ORDER_DELAY_NS = 300_000_000


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
    """``LiveStats(run_dir / "history.d")``; ``sample(now_ns)`` with the history clock's time."""

    def __init__(self, parts_dir: Path):
        self.parts_dir = Path(parts_dir)
        self._lock = threading.Lock()
        self._files: dict[str, tuple[int, bytes]] = {}   # name -> (fd, partial last line)
        self._jobs: list[tuple[int, int, str]] = []      # heap of (time, +1/-1, key)
        self._running: dict[str, int] = {}
        self._faults: dict[int, str] = {}
        self.snap = Snapshot()

    def sample(self, now_ns: int, final: bool = False) -> Snapshot:
        """Read what was appended since the last call and return the counts so far; ``final``:
        the processes have stopped writing, so every job event can be put in order."""
        with self._lock:
            for chunk in self._read_new():
                self._count(chunk)
            self._order_jobs(float("inf") if final else now_ns - ORDER_DELAY_NS)
            s = self.snap
            s.elapsed_s = now_ns / 1e9
            s.faults_active = sorted(self._faults.values())
            return Snapshot(**{**s.__dict__, "faults_active": list(s.faults_active)})

    def close(self) -> None:
        with self._lock:
            for fd, _ in self._files.values():
                os.close(fd)
            self._files.clear()

    # -- reading -------------------------------------------------------------------------
    def _read_new(self):
        try:
            names = [n for n in os.listdir(self.parts_dir) if n.endswith(".jsonl")]
        except OSError:   # merged and removed at the end of the run: keep the last counts
            names = []
        for name in names:
            if name not in self._files:
                try:
                    self._files[name] = (os.open(self.parts_dir / name, os.O_RDONLY), b"")
                except OSError:
                    continue
        for name, (fd, pending) in list(self._files.items()):
            data = []
            while True:
                try:
                    block = os.read(fd, 1 << 20)
                except OSError:
                    block = b""
                if not block:
                    break
                data.append(block)
            if not data:
                continue
            text = pending + b"".join(data)
            cut = text.rfind(b"\n") + 1           # a line still being written waits for the next call
            self._files[name] = (fd, text[cut:])
            if cut:
                yield text[:cut]

    def _count(self, chunk: bytes) -> None:
        s = self.snap
        s.calls += chunk.count(_INVOKE) - chunk.count(_INVOKE_EFFECT)   # lease calls started
        s.acquires_won += chunk.count(_WON)
        s.acquires_lost += chunk.count(_LOST)
        s.acquires_unknown += chunk.count(_UNKNOWN)
        for line in _lines_with(chunk, _RELEASED):
            if b'"value":false' in line:     # the release deleted nothing
                s.found_nothing += 1
        for line in _lines_with(chunk, _JOB):
            job = _job(line)
            if job is not None:
                heapq.heappush(self._jobs, job)
        for line in _lines_with(chunk, _FAULT):
            self._fault(line)

    def _fault(self, line: bytes) -> None:
        try:
            event = json.loads(line)
        except ValueError:
            return
        n = event.get("n")
        if event.get("type") == "fault_start":
            self._faults[n] = f"{event.get('fault')}:{event.get('target')}"
        elif self._faults.pop(n, None) is not None:
            self.snap.faults_done += 1

    def _order_jobs(self, upto_ns: float) -> None:
        """Replay job starts and ends older than ``upto_ns`` in time order (an end before a start
        at the same instant), counting each start that finds another run of its key going."""
        while self._jobs and self._jobs[0][0] <= upto_ns:
            _, delta, key = heapq.heappop(self._jobs)
            going = self._running.get(key, 0)
            if delta > 0 and going > 0:
                self.snap.overlaps += 1
            self._running[key] = max(0, going + delta)


def _lines_with(chunk: bytes, needle: bytes):
    """The whole lines of ``chunk`` that contain ``needle`` (found with ``bytes.find``)."""
    at = chunk.find(needle)
    while at >= 0:
        start = chunk.rfind(b"\n", 0, at) + 1
        end = chunk.find(b"\n", at)
        end = len(chunk) if end < 0 else end
        yield chunk[start:end]
        at = chunk.find(needle, end)


def _job(line: bytes) -> tuple[int, int, str] | None:
    """``(time, +1 for a start / -1 for an end, key)`` of a job line, read at the fields' fixed
    places (``{"time":N,...,"type":"job_start",...,"key":"K"...}``); as many job lines as acquires
    won, so no JSON parsing. A line of another shape is left out."""
    comma, at = line.find(b","), line.find(b'"key":"')
    if not line.startswith(b'{"time":') or comma < 0 or at < 0:
        return None
    end = line.find(b'"', at + 7)
    try:
        t = int(line[8:comma])
    except ValueError:
        return None
    return t, 1 if b'"type":"job_start"' in line else -1, line[at + 7:end].decode(errors="replace")
