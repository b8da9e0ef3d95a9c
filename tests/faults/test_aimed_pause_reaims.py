"""A pause aimed at a lease call (``pause:releaser`` and the like) stops a slot while its call is
while the call's first command is in flight: when the picked slot's call had sent more than that
one command by the time the stop took hold (the pick came after the check, or the stop too late:
a check-then-act release's delete may have gone), or it left the call, the pause sees it on the
frozen board, continues that worker at once and aims again at another call; ``retries`` in
``measured`` counts the picks that missed."""
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
            w.hold(w.index("w1.s0"), True)   # a release hands back a claim it holds
            w.enter(w.index("w1.s0"), "release")
            w.count_sent(w.index("w1.s0"))()
        return n


def _releaser_paused(tmp_path, workers):
    """w1.s0 inside its release with its read in flight, and a 0.1 s ``pause:releaser`` started
    on it: (context, fault, active)."""
    board = SlotBoard(tmp_path / "slots.bin", workers=2, slots=1, create=True)
    board.hold(board.index("w1.s0"), True)   # a release hands back a claim it holds
    board.enter(board.index("w1.s0"), "release")
    board.count_sent(board.index("w1.s0"))()
    ctx = fault_ctx(tmp_path, HolderTable(board), workers)
    fault = Pause()
    return ctx, fault, fault.start(ctx, Step(at=0.0, fault="pause", target="releaser", duration=0.1))


def _sends_its_delete(w):
    w.count_sent(w.index("w0.s0"))()


def _leaves_the_call(w):
    w.leave(w.index("w0.s0"))


@pytest.mark.parametrize("move", [_sends_its_delete, _leaves_the_call])
def test_a_pick_whose_call_moved_on_before_the_stop_is_continued_and_the_next_caller_paused(tmp_path, move, workers):
    board = SlotBoard(tmp_path / "slots.bin", workers=2, slots=1, create=True)
    worker_side = SlotBoard(tmp_path / "slots.bin", workers=2, slots=1)
    worker_side.hold(worker_side.index("w0.s0"), True)   # a release hands back a claim it holds
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


def test_a_caller_stopped_with_its_first_command_in_flight_is_paused_on_the_first_pick(tmp_path, workers):
    """The call's first command (a check-then-act release's read) is in flight: the stop lands
    between the check and the act, so the first pick stands."""
    ctx, fault, active = _releaser_paused(tmp_path, workers)
    assert stopped_within(workers[1].pid, 1.0) and not is_stopped(workers[0].pid)
    measured = fault.stop(ctx, active)
    assert (measured["slot"], measured["in_call"], measured["retries"]) == ("w1.s0", True, 0)


def test_a_caller_that_has_sent_nothing_yet_is_stopped_once_its_first_command_went(tmp_path, workers):
    """Stopped before its read, a release would read the state after the pause and act on that:
    the pause waits for the first command (sent 0.15 s after the pick) and stops the slot then."""
    board = SlotBoard(tmp_path / "slots.bin", workers=2, slots=1, create=True)
    board.hold(board.index("w1.s0"), True)   # a release hands back a claim it holds
    board.enter(board.index("w1.s0"), "release")
    ctx = fault_ctx(tmp_path, HolderTable(board), workers)
    timer = threading.Timer(0.15, board.count_sent(board.index("w1.s0")))
    timer.start()
    fault = Pause()
    t = time.monotonic()
    active = fault.start(ctx, Step(at=0.0, fault="pause", target="releaser", duration=0.1))
    assert time.monotonic() - t >= 0.14 and stopped_within(workers[1].pid, 1.0)
    measured = fault.stop(ctx, active)
    assert (measured["slot"], measured["in_call"], measured["retries"]) == ("w1.s0", True, 0)
    assert measured["waited_s"] >= 0.14
    timer.join()


def test_a_pick_past_its_first_command_is_continued_and_the_next_caller_paused(tmp_path, workers):
    """w0.s0's release had sent its read and its delete when the pause picked it (the pick came
    after the check): that worker is continued at once, and w1.s0, entering a release 0.2 s later
    and sending its read, is the one paused."""
    board = SlotBoard(tmp_path / "slots.bin", workers=2, slots=1, create=True)
    board.hold(board.index("w0.s0"), True)   # a release hands back a claim it holds
    board.enter(board.index("w0.s0"), "release")
    for _ in range(2):
        board.count_sent(board.index("w0.s0"))()
    ctx = fault_ctx(tmp_path, HolderTable(board), workers)

    def w1_releases():
        board.hold(board.index("w1.s0"), True)   # a release hands back a claim it holds
        board.enter(board.index("w1.s0"), "release")
        board.count_sent(board.index("w1.s0"))()
    timer = threading.Timer(0.2, w1_releases)
    timer.start()
    fault = Pause()
    active = fault.start(ctx, Step(at=0.0, fault="pause", target="releaser", duration=0.1))
    assert active.data["names"] == ["w1"] and stopped_within(workers[1].pid, 1.0)
    assert not is_stopped(workers[0].pid)
    measured = fault.stop(ctx, active)
    assert (measured["slot"], measured["in_call"], measured["retries"]) == ("w1.s0", True, 1)
    assert ctx.ledger.heal_all() == []
    timer.join()


def test_a_releasers_pause_ends_once_another_slot_holds_a_claim(tmp_path, workers):
    """w1.s0 is stopped inside its release; at the pause's end no other slot holds a claim, so the
    pause waits until w0.s0 takes one (0.2 s later) and only then continues w1."""
    ctx, fault, active = _releaser_paused(tmp_path, workers)
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
    ctx, fault, active = _releaser_paused(tmp_path, workers)
    measured = fault.stop(ctx, active)
    assert measured["resumed_on"] is None and measured["resume_waited_s"] >= 0.45
    assert not is_stopped(workers[1].pid) and ctx.ledger.heal_all() == []
