"""Which lease call each slot is inside and whether it holds a claim, on a board in shared memory.

Aiming a fault (``pause:holder``, ``pause:releaser`` ...) needs to know, at any moment, who holds
a claim and who is inside which lease call. Telling the harness over a pipe costs a write and a
flush per lease call in every worker and a parse per line in the harness; on two cores that was
the largest cost the harness added to a bare client loop. So each slot writes a small record into
a file both sides map into memory (``RUN_DIR/slots.bin``): a few bytes stored per call, no system
call, nothing to read until a fault asks.

One record per slot (index: worker × slots + slot), written only by that slot's thread:

    call      u8   0 none, 1 acquire, 2 release, 3 renew   (written last on entry, first on exit)
    holding   u8   1 while the slot holds a claim
    sent      u16  commands the slot's client sent since it entered its current (or last) call:
                   a pause aimed at a call tells by it whether the call moved on before the stop held
    number    u32  how many calls the slot has entered (tells one release from the next)
    entered   i64  CLOCK_MONOTONIC ns when it entered its current call
    since     i64  CLOCK_MONOTONIC ns when it began holding
    renewed   i64  CLOCK_MONOTONIC ns when its claim's deadline was last set: ``since``, then each
                   renewal that succeeded (the claim loop calls ``hold(True)`` again after one)
    won       u32  acquires that returned true          \
    lost      u32  acquires that returned false          | counted as each call returns (the
    unknown   u32  acquires that raised                  | run's live progress sums them:
    nothing   u32  releases that returned false         /  ``leasecheck.harness.run.live_stats``)
    (padding  16 bytes: a record fills one 64-byte cache line of the page-aligned map, so slots of
              workers on different cores never store into one line: bench/RESULTS.md, "eighteenth
              session")

A reader may see a record mid-update; the worst it does is aim a pause at a slot that just left
its call, which the pause measures (``in_call``), or show a count one call behind. The checker
never reads the board.
"""
from __future__ import annotations

import mmap
import os
import struct
import time
import types
from pathlib import Path
from typing import Any, Final

try:    # built with the compiled modules (setup.py); used only by them (``_native_record``)
    from leasecheck import _board
except ImportError:
    _board = None

from leasecheck.events import ACQUIRE, RELEASE
from leasecheck.rundir import SLOTS as FILE   # in the run directory, removed when the workers have stopped

# Native byte order: the workers and the harness that share the map run on one machine, and each
# slot stores its fields in place through typed views of the map (``SlotRecord``).
RECORD = struct.Struct("=BBHIqqqIIII16x")
CALLS = ("", "acquire", "release", "renew")
_CODE: Final = {name: i for i, name in enumerate(CALLS) if name}
# What a returning call counts (``SlotRecord.leave(outcome)``): 0 nothing, else one of these, the
# counter at offset 28 + 4 x outcome.
WON, LOST, UNKNOWN, NOTHING = 1, 2, 3, 4
_U32: Final = 0xFFFFFFFF
_U16: Final = 0xFFFF
_clock: Final = time.monotonic_ns


def outcome(call: str, value: bool | None) -> int:
    """What a ``call`` that returned ``value`` (None: it raised) counts as on the board (0: nothing)."""
    if call == ACQUIRE:
        return UNKNOWN if value is None else WON if value else LOST
    return NOTHING if call == RELEASE and value is False else 0


def code(call: str) -> int:
    """The board's code of a lease call's name (``CALLS``)."""
    return _CODE[call]


class SlotRecord:
    """One slot's record, as that slot's thread writes it: each field stored in place through a
    typed view of the record's bytes (``B``, ``H``, ``I``, ``q`` items at the offsets above), no
    struct packing. The claim loop holds its slot's record and calls these directly: a lease call
    costs an ``enter`` and a ``leave``, a claim two ``hold``s. Where this module runs compiled,
    a record is ``leasecheck._board.Record`` instead (``record_of``): the same methods and bytes,
    in C, at about a tenth of the instructions (a field stored through a memory view cost some
    290)."""

    def __init__(self, buffer, i: int) -> None:
        view = memoryview(buffer)[i * RECORD.size:(i + 1) * RECORD.size]
        self._b, self._h, self._u, self._q = view.cast("B"), view.cast("H"), view.cast("I"), view.cast("q")

    @staticmethod
    def alone() -> Any:
        """A record on no board (a claim loop run outside a worker: a test, a benchmark)."""
        return record_of(bytearray(RECORD.size), 0)

    def enter(self, call: int) -> None:
        """The slot enters lease call ``call`` (a code, ``code(name)``): sent back to 0, number up
        by one, entered now, the call's code written last."""
        u = self._u
        self._h[1] = 0
        u[1] = (u[1] + 1) & _U32
        self._q[1] = _clock()
        self._b[0] = call

    def leave(self, outcome: int = 0) -> None:
        """The slot left its call, which counts as ``outcome`` (0: as nothing): the code cleared first."""
        self._b[0] = 0
        if outcome:
            u, at = self._u, 7 + outcome
            u[at] = (u[at] + 1) & _U32

    def hold(self, holding: bool) -> None:
        """``holding`` True while already holding is a renewal: ``renewed`` moves, ``since`` stays."""
        b = self._b
        if holding:
            q, now = self._q, _clock()
            if b[1]:
                q[3] = now
            else:
                q[2] = q[3] = now
                b[1] = 1
        else:
            b[1] = 0

    def sent(self) -> None:
        """One more command sent by the slot's client (its send tracker's ``on_sent``)."""
        h = self._h
        h[1] = (h[1] + 1) & _U16

    def sent_count(self) -> int:
        """The commands the slot sent since it entered its current (or last) call."""
        return self._h[1]

    def release(self) -> None:
        """Let go of the views (writing after this raises ``ValueError``)."""
        for view in (self._b, self._h, self._u, self._q):
            view.release()

    def fields(self) -> tuple:
        """The record's fields now, in ``RECORD``'s order."""
        return RECORD.unpack(self._b)

    def call(self) -> tuple[int, int, int]:
        """(code of the call the slot is inside, 0 when none; its number; entered ns), as stored now."""
        return self._b[0], self._u[1], self._q[1]


def _native_record() -> Any:
    """``leasecheck._board.Record`` where this module runs compiled and the extension was built with
    it (setup.py); else None (``SlotRecord``)."""
    if isinstance(_native_record, types.FunctionType):     # interpreted: the pure-Python build
        return None
    return None if _board is None else _board.Record


_RECORD: Final = _native_record()


def record_of(buffer, i: int) -> Any:
    """Record ``i`` of ``buffer``'s writer: a ``leasecheck._board.Record`` compiled, else a
    ``SlotRecord`` (the same methods and bytes)."""
    return SlotRecord(buffer, i) if _RECORD is None else _RECORD(buffer, i)


class SlotBoard:
    """The shared records of ``slots`` slots per worker, ``workers`` workers."""

    def __init__(self, path: Path, workers: int, slots: int, create: bool = False):
        self.path, self.workers, self.slots = Path(path), workers, slots
        size = RECORD.size * workers * slots
        if create:
            self.path.write_bytes(bytes(size))
        fd = os.open(self.path, os.O_RDWR)
        try:
            self._mm = mmap.mmap(fd, size)
        finally:
            os.close(fd)
        self._records: dict[int, Any] = {}

    # -- a worker's slots write ----------------------------------------------------------------
    def index(self, process: str) -> int:
        """``"w3.s1"`` -> its record number."""
        worker, slot = process.split(".")
        return int(worker[1:]) * self.slots + int(slot[1:])

    def record(self, i: int) -> Any:
        """Record ``i``'s writer (one per record: every way of writing it shares it)."""
        rec = self._records.get(i)
        if rec is None:
            rec = self._records[i] = record_of(self._mm, i)
        return rec

    def enter(self, i: int, call: str) -> None:
        self.record(i).enter(_CODE[call])

    def leave(self, i: int, outcome: int = 0) -> None:
        """Record ``i`` left its call, which counts as ``outcome`` (0: as nothing)."""
        self.record(i).leave(outcome)

    def hold(self, i: int, holding: bool) -> None:
        """``holding`` True while already holding is a renewal: ``renewed`` moves, ``since`` stays."""
        self.record(i).hold(holding)

    def count_sent(self, i: int):
        """A function of no arguments that counts one command sent by slot ``i`` (its send
        tracker calls it for each command, ``SendTracker.on_sent``); entering a call resets it."""
        return self.record(i).sent

    def writers(self, i: int):
        """``(on_call, on_hold)`` of record ``i`` by call name: ``on_call(process, call)`` entering a
        call, ``on_call(process, None, outcome)`` as it returns, ``on_hold(process, holding)`` (a
        replay's or a test's way to write a record; the claim loop holds the ``SlotRecord``)."""
        rec = self.record(i)

        def on_call(_process: str, call: str | None, outcome: int = 0) -> None:
            if call:
                rec.enter(_CODE[call])
            else:
                rec.leave(outcome)

        def on_hold(_process: str, holding: bool) -> None:
            rec.hold(holding)
        return on_call, on_hold

    # -- the harness reads ----------------------------------------------------------------------
    def records(self) -> list[tuple[str, str, bool, int, int, int, int]]:
        """(process, call or "", holding, number, entered_ns, since_ns, renewed_ns) of every slot."""
        out = []
        for i, (call, holding, _sent, number, entered, since, renewed, *_counts) in enumerate(
                RECORD.iter_unpack(self._mm)):
            process = f"w{i // self.slots}.s{i % self.slots}"
            out.append((process, CALLS[call] if call < len(CALLS) else "", bool(holding), number, entered, since,
                        renewed))
        return out

    def totals(self) -> tuple[int, int, int, int, int]:
        """``totals(board)`` of this board."""
        return totals(self._mm)

    def sent(self, i: int) -> int:
        """Record ``i``'s commands sent since it entered its current or last call."""
        return self.record(i).sent_count()

    def close(self) -> None:
        for rec in self._records.values():   # the map closes once no view of it is left
            rec.release()
        try:
            self._mm.close()
        except (BufferError, ValueError):
            pass


def totals(board) -> tuple[int, int, int, int, int]:
    """(calls entered, acquires won, lost, unknown, releases that found nothing) summed over every
    record of ``board`` (the file's bytes, or a map of it)."""
    calls = won = lost = unknown = nothing = 0
    for record in RECORD.iter_unpack(board):
        calls += record[3]
        won += record[7]
        lost += record[8]
        unknown += record[9]
        nothing += record[10]
    return calls, won, lost, unknown, nothing
