"""A pause aimed at a lease call (``pause:releaser`` and the like) stops a slot while its call is
still where the pick saw it: when, before the stop took hold, the picked slot sent a command
beyond the one in flight at the pick (a check-then-act release's delete may have gone) or left the
call, the pause sees it on the frozen board, continues that worker at once and aims again at
another call; ``retries`` in ``measured`` counts the picks that missed."""
import threading
import time

import pytest

from leasecheck.harness.faults.base import Step
from leasecheck.harness.faults.pause import Pause
from leasecheck.harness.run.holders import HolderTable
from leasecheck.harness.run.procfs import is_stopped
from leasecheck.harness.run.slot_board import SlotBoard
from tests.faults.conftest import fault_ctx, stopped_within


class MovesOnAfterThePick(HolderTable):
    """The first pick is w0.s0's release; right after it (once the pause read the slot's count of
    commands), ``move`` runs (the race), and w1.s0 enters a release of its own and sends its read."""
    def __init__(self, board, worker_side, move):
        super().__init__(board)
        self.worker_side, self.move, self.reads = worker_side, move, 0

    def sent(self, process):
        n = super().sent(process)
        self.reads += 1
        if self.reads == 1:
            w = self.worker_side
            self.move(w)
            w.enter(w.index("w1.s0"), "release")
            w.count_sent(w.index("w1.s0"))()
        return n




def _sends_its_delete(w):
    w.count_sent(w.index("w0.s0"))()


def _leaves_the_call(w):
    w.leave(w.index("w0.s0"))


@pytest.mark.parametrize("move", [_sends_its_delete, _leaves_the_call])
def test_a_pick_whose_call_moved_on_before_the_stop_is_continued_and_the_next_caller_paused(tmp_path, move, workers):
    board = SlotBoard(tmp_path / "slots.bin", workers=2, slots=1, create=True)
    worker_side = SlotBoard(tmp_path / "slots.bin", workers=2, slots=1)
    worker_side.enter(worker_side.index("w0.s0"), "release")
    worker_side.count_sent(worker_side.index("w0.s0"))()        # its read is in flight
    ctx = fault_ctx(tmp_path, MovesOnAfterThePick(board, worker_side, move), workers)
    fault = Pause()
    active = fault.start(ctx, Step(at=0.0, fault="pause", target="releaser", duration=0.2))
    assert active.data["names"] == ["w1"]
    assert stopped_within(workers[1].pid, 1.0)
    assert not is_stopped(workers[0].pid)                  # the first pick was continued at once
    time.sleep(0.2)
    measured = fault.stop(ctx, active)
    assert (measured["slot"], measured["in_call"], measured["retries"]) == ("w1.s0", True, 1)
    assert measured["processes"] == ["w1"] and measured["stopped_s"] >= 0.1
    assert ctx.ledger.heal_all() == []                     # nothing left to undo


@pytest.mark.parametrize("sent_at_pick", [0, 1])
def test_a_caller_stopped_with_its_first_command_in_flight_is_paused_on_the_first_pick(tmp_path, sent_at_pick, workers):
    """Nothing sent yet at the pick, or the call's first command in flight: either way the stop
    lands before the call acts on a reply, so the first pick stands."""
    board = SlotBoard(tmp_path / "slots.bin", workers=2, slots=1, create=True)
    board.enter(board.index("w1.s0"), "release")
    for _ in range(sent_at_pick):
        board.count_sent(board.index("w1.s0"))()
    ctx = fault_ctx(tmp_path, HolderTable(board), workers)
    fault = Pause()
    active = fault.start(ctx, Step(at=0.0, fault="pause", target="releaser", duration=0.1))
    assert stopped_within(workers[1].pid, 1.0) and not is_stopped(workers[0].pid)
    measured = fault.stop(ctx, active)
    assert (measured["slot"], measured["in_call"], measured["retries"]) == ("w1.s0", True, 0)


def test_a_releasers_pause_ends_once_another_slot_holds_a_claim(tmp_path, workers):
    """w1.s0 is stopped inside its release; at the pause's end no other slot holds a claim, so the
    pause waits until w0.s0 takes one (0.2 s later) and only then continues w1."""
    board = SlotBoard(tmp_path / "slots.bin", workers=2, slots=1, create=True)
    board.enter(board.index("w1.s0"), "release")
    board.count_sent(board.index("w1.s0"))()
    ctx = fault_ctx(tmp_path, HolderTable(board), workers)
    fault = Pause()
    active = fault.start(ctx, Step(at=0.0, fault="pause", target="releaser", duration=0.1))
    assert stopped_within(workers[1].pid, 1.0)
    other = SlotBoard(tmp_path / "slots.bin", workers=2, slots=1)
    timer = threading.Timer(0.2, lambda: other.hold(other.index("w0.s0"), True))
    timer.start()
    t = time.monotonic()
    measured = fault.stop(ctx, active)
    assert time.monotonic() - t >= 0.19 and not is_stopped(workers[1].pid)
    assert measured["resumed_on"] == "w0.s0" and 0.19 <= measured["resume_waited_s"] < 0.5
    timer.join()


def test_a_releasers_pause_ends_within_its_wait_when_no_slot_takes_a_claim(tmp_path, workers):
    board = SlotBoard(tmp_path / "slots.bin", workers=2, slots=1, create=True)
    board.enter(board.index("w1.s0"), "release")
    ctx = fault_ctx(tmp_path, HolderTable(board), workers)
    fault = Pause()
    active = fault.start(ctx, Step(at=0.0, fault="pause", target="releaser", duration=0.1))
    measured = fault.stop(ctx, active)
    assert measured["resumed_on"] is None and measured["resume_waited_s"] >= 0.45
    assert not is_stopped(workers[1].pid) and ctx.ledger.heal_all() == []
