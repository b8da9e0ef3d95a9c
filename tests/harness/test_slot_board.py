"""The slot board's per-slot writers (the claim loop's hot path) leave the records that
``enter``/``leave``/``hold`` leave: the same call, number, times and holding flag."""
import time

import pytest

from leasecheck.harness.run.slot_board import SlotBoard
from tests.native import built


def test_a_slots_writers_write_what_enter_leave_and_hold_write(tmp_path):
    board = SlotBoard(tmp_path / "slots.bin", workers=2, slots=2, create=True)
    on_call, on_hold = board.writers(board.index("w1.s0"))
    before = time.monotonic_ns()
    on_hold("w1.s0", True)
    on_call("w1.s0", "acquire")
    on_call("w1.s0", None)
    on_call("w1.s0", "release")
    records = {p: rest for p, *rest in board.records()}
    call, holding, number, entered, since, renewed = records["w1.s0"]
    assert (call, holding, number) == ("release", True, 2)
    assert before <= since == renewed <= entered <= time.monotonic_ns()
    assert all(r == ["", False, 0, 0, 0, 0] for p, r in records.items() if p != "w1.s0")
    on_call("w1.s0", None)
    on_hold("w1.s0", False)
    board.enter(board.index("w1.s0"), "renew")      # the two ways share the slot's call count
    call, holding, number, *_ = {p: rest for p, *rest in board.records()}["w1.s0"]
    assert (call, holding, number) == ("renew", False, 3)
    board.close()


def test_a_slots_sent_count_counts_its_commands_since_it_entered_its_call(tmp_path):
    board = SlotBoard(tmp_path / "slots.bin", workers=1, slots=2, create=True)
    i = board.index("w0.s1")
    on_call, _ = board.writers(i)
    count = board.count_sent(i)
    on_call("w0.s1", "release")
    count()
    count()
    assert board.sent(i) == 2 and board.sent(board.index("w0.s0")) == 0
    on_call("w0.s1", None)
    assert board.sent(i) == 2          # leaving keeps the last call's count
    on_call("w0.s1", "acquire")
    assert board.sent(i) == 0          # entering the next call starts it again
    count()
    board.enter(i, "renew")
    assert board.sent(i) == 0
    call, holding, number, *_ = {p: rest for p, *rest in board.records()}["w0.s1"]
    assert (call, number) == ("renew", 3)
    board.close()


def test_each_slot_counts_what_its_returning_calls_count_and_the_board_sums_them(tmp_path):
    from leasecheck.harness.run.slot_board import LOST, NOTHING, UNKNOWN, WON, totals
    board = SlotBoard(tmp_path / "slots.bin", workers=2, slots=1, create=True)
    w0, _ = board.writers(board.index("w0.s0"))
    w1, _ = board.writers(board.index("w1.s0"))
    for call, outcome in (("acquire", WON), ("release", NOTHING), ("acquire", LOST), ("acquire", LOST),
                          ("acquire", UNKNOWN), ("renew", 0), ("release", 0)):
        w0("w0.s0", call)
        w0("w0.s0", None, outcome)
    w1("w1.s0", "acquire")
    w1("w1.s0", None, WON)
    w1("w1.s0", "release")                       # still inside it: entered, not yet counted
    board.leave(board.index("w1.s0"), NOTHING)   # the other way to write shares the counts
    w1("w1.s0", "acquire")
    w1("w1.s0", None, LOST)
    # calls entered, acquires won, lost, unknown, releases that found nothing
    assert board.totals() == (10, 2, 3, 1, 2)
    reader = SlotBoard(tmp_path / "slots.bin", workers=2, slots=1)    # another process's view
    assert reader.totals() == totals((tmp_path / "slots.bin").read_bytes()) == (10, 2, 3, 1, 2)
    call, holding, number, *_ = {p: rest for p, *rest in reader.records()}["w1.s0"]
    assert (call, holding, number) == ("", False, 3)
    board.close()
    reader.close()


def test_what_a_returning_call_counts_as():
    from leasecheck.harness.run.slot_board import LOST, NOTHING, UNKNOWN, WON, outcome
    assert [outcome("acquire", v) for v in (True, False, None)] == [WON, LOST, UNKNOWN]
    assert [outcome("release", v) for v in (True, False, None)] == [0, NOTHING, 0]   # raised: not known to be empty
    assert [outcome("renew", v) for v in (True, False, None)] == [0, 0, 0]


def test_the_c_record_stores_the_same_bytes_as_the_python_record():
    # compiled, a slot's record is leasecheck._board.Record (built with the compiled modules,
    # setup.py); it must leave the bytes SlotRecord's typed views leave, field for field, the call's
    # number and the sent count wrapping where theirs do
    import struct

    from leasecheck.harness.run import slot_board
    from leasecheck.harness.run.slot_board import LOST, NOTHING, RECORD, UNKNOWN, WON, SlotRecord
    compiled = not slot_board.__file__.endswith(".py")
    assert (slot_board._RECORD is not None) == compiled
    assert built("_board") or not compiled
    if not built("_board"):       # no compiler where this was installed: the board never uses it
        return
    from leasecheck._board import Record
    times = (8, 16, 24)     # entered, since, renewed: clock readings, compared apart
    out = {}
    for kind in (SlotRecord, Record):
        buf = bytearray(RECORD.size * 3)
        start = bytearray(RECORD.size)
        # call, holding, sent, number, entered, since, renewed, won, lost, unknown, nothing
        struct.pack_into("=BBHIqqqIIII", start, 0, 0, 0, 0, 0xFFFFFFFF, 0, 0, 0, 0xFFFFFFFF, 0, 0, 0)
        buf[RECORD.size:2 * RECORD.size] = start           # at the wrap: the next call and command wrap to 0
        rec = kind(buf, 1)
        before = time.monotonic_ns()
        rec.enter(1)
        assert rec.call()[:2] == (1, 0) and before <= rec.call()[2] <= time.monotonic_ns()
        struct.pack_into("=H", buf, RECORD.size + 2, 0xFFFF)    # the sent count at its wrap
        rec.sent()
        rec.sent()
        assert rec.sent_count() == 1
        rec.hold(True)
        rec.leave(WON)
        rec.enter(2)
        rec.hold(True)                     # a renewal: renewed moves, since stays
        rec.leave(NOTHING)
        rec.hold(False)
        for outcome in (LOST, LOST, UNKNOWN, 0):
            rec.enter(3)
            rec.leave(outcome)
        fields = rec.fields()
        assert fields == RECORD.unpack(bytes(buf[RECORD.size:2 * RECORD.size]))
        assert buf[:RECORD.size] == buf[2 * RECORD.size:] == bytes(RECORD.size)   # its neighbours untouched
        _entered, since, renewed = fields[4:7]
        assert before <= since <= renewed <= time.monotonic_ns()
        out[kind] = [f for i, f in enumerate(fields) if i not in (4, 5, 6)]
        rec.release()
        with pytest.raises(ValueError):
            rec.enter(1)
    # code 0 (left), not holding, 0 sent since the last entry, 6 calls after the wrap, acquires won
    # (wrapped to 0), lost, unknown, releases that found nothing
    assert out[Record] == out[SlotRecord] == [0, 0, 0, 5, 0, 2, 1, 1]
    with pytest.raises(IndexError):
        Record(bytearray(RECORD.size * 2), 2)
    with pytest.raises(BufferError):
        Record(bytes(RECORD.size), 0)
