"""Who holds a claim, for aiming faults: a killed worker's records are forgotten at once."""
from leasecheck.harness.run.holders import HolderTable
from leasecheck.harness.run.slot_board import SlotBoard


def test_a_killed_workers_slots_are_forgotten(tmp_path):
    board = SlotBoard(tmp_path / "slots.bin", workers=3, slots=2, create=True)   # room for a replacement
    table = HolderTable(board)
    board.hold(board.index("w1.s1"), True)
    board.enter(board.index("w1.s1"), "renew")
    board.hold(board.index("w2.s0"), True)
    assert table.holders() == [1, 2] and table.wait_for_holding_slot(0)[0] == "w2.s0"
    assert table.slots_of(1) == [("w1.s0", False), ("w1.s1", True)]
    table.forget(1)
    assert table.holders() == [2] and table.slot("w1.s1")[:2] == ("", False)
    board.close()
