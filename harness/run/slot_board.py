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

A reader may see a record mid-update; the worst it does is aim a pause at a slot that just left
its call, which the pause measures (``in_call``), or show a count one call behind. The checker
never reads the board.
"""
from __future__ import annotations

import mmap
import os
import struct
import time
from pathlib import Path

from leasecheck.events import ACQUIRE, RELEASE
from leasecheck.rundir import SLOTS as FILE   # in the run directory, removed when the workers have stopped

RECORD = struct.Struct("<BBHIqqqIIII")
CALLS = ("", "acquire", "release", "renew")
_CODE = {name: i for i, name in enumerate(CALLS) if name}
# What a returning call counts (``on_call(process, None, outcome)``): 0 nothing, else one of these,
# the counter at offset 28 + 4 x outcome.
WON, LOST, UNKNOWN, NOTHING = 1, 2, 3, 4
_COUNT = struct.Struct("<I")
_ENTRY = struct.Struct("<HIq")    # sent (reset to 0), number, entered: at offset 2
_SINCE = struct.Struct("<qq")     # since, renewed: at offset 16
_RENEWED = struct.Struct("<q")    # renewed alone: at offset 24
_SENT = struct.Struct("<H")       # sent: at offset 2


def outcome(call: str, value: bool | None) -> int:
    """What a ``call`` that returned ``value`` (None: it raised) counts as on the board (0: nothing)."""
    if call == ACQUIRE:
        return UNKNOWN if value is None else WON if value else LOST
    return NOTHING if call == RELEASE and value is False else 0


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
        self._numbers = [0] * (workers * slots)
        self._sent = [0] * (workers * slots)
        self._outcomes = [[0] * 5 for _ in range(workers * slots)]   # per slot, by outcome (1..4)

    # -- a worker's slots write ----------------------------------------------------------------
    def index(self, process: str) -> int:
        """``"w3.s1"`` -> its record number."""
        worker, slot = process.split(".")
        return int(worker[1:]) * self.slots + int(slot[1:])

    def enter(self, i: int, call: str) -> None:
        self._numbers[i] += 1
        self._sent[i] = 0
        off = i * RECORD.size
        _ENTRY.pack_into(self._mm, off + 2, 0, self._numbers[i], time.monotonic_ns())
        self._mm[off] = _CODE[call]

    def leave(self, i: int, outcome: int = 0) -> None:
        """Record ``i`` left its call, which counts as ``outcome`` (0: as nothing)."""
        off = i * RECORD.size
        self._mm[off] = 0
        if outcome:
            counts = self._outcomes[i]
            counts[outcome] = n = (counts[outcome] + 1) & 0xFFFFFFFF
            _COUNT.pack_into(self._mm, off + 28 + 4 * outcome, n)

    def hold(self, i: int, holding: bool) -> None:
        """``holding`` True while already holding is a renewal: ``renewed`` moves, ``since`` stays."""
        off = i * RECORD.size
        if holding:
            now = time.monotonic_ns()
            if self._mm[off + 1]:
                _RENEWED.pack_into(self._mm, off + 24, now)
            else:
                _SINCE.pack_into(self._mm, off + 16, now, now)
        self._mm[off + 1] = 1 if holding else 0

    def count_sent(self, i: int):
        """A function of no arguments that counts one command sent by slot ``i`` (its send
        tracker calls it for each command, ``SendTracker.on_sent``); entering a call resets it."""
        mm, off, counts, pack = self._mm, i * RECORD.size + 2, self._sent, _SENT.pack_into

        def on_sent() -> None:
            counts[i] = n = (counts[i] + 1) & 0xFFFF
            pack(mm, off, n)
        return on_sent

    def writers(self, i: int):
        """``(on_call, on_hold)`` of record ``i``, as the claim loop calls them (``on_call(process,
        call)`` entering a call, ``on_call(process, None, outcome)`` as it returns, ``on_hold(process,
        holding)``): ``enter``/``leave`` and ``hold`` with the record's place bound once, for the
        slot's hot path (two calls per lease call)."""
        mm, off, numbers, sent, codes = self._mm, i * RECORD.size, self._numbers, self._sent, _CODE
        entry, since, renewed, clock = _ENTRY.pack_into, _SINCE.pack_into, _RENEWED.pack_into, time.monotonic_ns
        count, counts = _COUNT.pack_into, self._outcomes[i]

        def on_call(_process: str, call: str | None, outcome: int = 0) -> None:
            if call:
                numbers[i] += 1
                sent[i] = 0
                entry(mm, off + 2, 0, numbers[i], clock())
                mm[off] = codes[call]
            else:
                mm[off] = 0
                if outcome:
                    counts[outcome] = n = (counts[outcome] + 1) & 0xFFFFFFFF
                    count(mm, off + 28 + 4 * outcome, n)

        def on_hold(_process: str, holding: bool) -> None:
            if holding:
                if mm[off + 1]:     # a renewal: the deadline moved, the claim is the same
                    renewed(mm, off + 24, clock())
                else:
                    now = clock()
                    since(mm, off + 16, now, now)
                    mm[off + 1] = 1
            else:
                mm[off + 1] = 0
        return on_call, on_hold

    # -- the harness reads ----------------------------------------------------------------------
    def records(self) -> list[tuple[str, str, bool, int, int, int, int]]:
        """(process, call or "", holding, number, entered_ns, since_ns, renewed_ns) of every slot."""
        out = []
        for i, (code, holding, _sent, number, entered, since, renewed, *_counts) in enumerate(
                RECORD.iter_unpack(self._mm)):
            process = f"w{i // self.slots}.s{i % self.slots}"
            out.append((process, CALLS[code] if code < len(CALLS) else "", bool(holding), number, entered, since,
                        renewed))
        return out

    def totals(self) -> tuple[int, int, int, int, int]:
        """``totals(board)`` of this board."""
        return totals(self._mm)

    def sent(self, i: int) -> int:
        """Record ``i``'s commands sent since it entered its current or last call."""
        return _SENT.unpack_from(self._mm, i * RECORD.size + 2)[0]

    def close(self) -> None:
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
