"""``pause:holder`` stops a slot that still holds its claim: when the holder it picked lets go
between the pick and the stop (its job ended — on a loaded machine a few milliseconds are enough),
the pause sees it on the frozen board, continues that worker at once and aims again; ``held`` and
``retries`` in ``measured`` say how it landed."""
import time

from leasecheck.harness.faults.base import Step
from leasecheck.harness.faults.pause import Pause
from leasecheck.harness.run.holders import HolderTable
from leasecheck.harness.run.procfs import is_stopped
from leasecheck.harness.run.slot_board import SlotBoard
from tests.faults.conftest import fault_ctx, stopped_within


class LetsGoAfterThePick(HolderTable):
    """The first pick is w0.s0; right after it, w0.s0 releases and w1.s0 claims — the race."""
    def __init__(self, board, worker_side):
        super().__init__(board)
        self.worker_side, self.picks = worker_side, 0

    def wait_for_holding_slot(self, timeout_s):
        found = super().wait_for_holding_slot(timeout_s)
        self.picks += 1
        if self.picks == 1:
            w = self.worker_side
            w.hold(w.index("w0.s0"), False)
            w.hold(w.index("w1.s0"), True)
        return found






def test_a_holder_that_let_go_before_the_stop_is_continued_and_the_next_holder_paused(tmp_path, workers):
    board = SlotBoard(tmp_path / "slots.bin", workers=2, slots=1, create=True)
    worker_side = SlotBoard(tmp_path / "slots.bin", workers=2, slots=1)
    worker_side.hold(worker_side.index("w0.s0"), True)
    table = LetsGoAfterThePick(board, worker_side)
    ctx = fault_ctx(tmp_path, table, workers)
    fault = Pause()
    active = fault.start(ctx, Step(at=0.0, fault="pause", target="holder", duration=0.3))
    assert active.data["names"] == ["w1"]
    assert stopped_within(workers[1].pid, 1.0)
    assert not is_stopped(workers[0].pid)           # the first pick was continued at once
    time.sleep(0.3)
    measured = fault.stop(ctx, active)
    assert measured["slot"] == "w1.s0" and measured["held"] is True and measured["retries"] == 1
    assert measured["processes"] == ["w1"] and measured["stopped_s"] >= 0.2
    assert not stopped_within(workers[1].pid, 0.05)
    assert ctx.ledger.heal_all() == []                # nothing left to undo


def test_a_holder_still_holding_is_paused_on_the_first_pick(tmp_path, workers):
    board = SlotBoard(tmp_path / "slots.bin", workers=2, slots=1, create=True)
    board.hold(board.index("w1.s0"), True)
    ctx = fault_ctx(tmp_path, HolderTable(board), workers)
    fault = Pause()
    active = fault.start(ctx, Step(at=0.0, fault="pause", target="holder", duration=0.1))
    assert stopped_within(workers[1].pid, 1.0) and not is_stopped(workers[0].pid)
    measured = fault.stop(ctx, active)
    assert (measured["slot"], measured["held"], measured["retries"]) == ("w1.s0", True, 0)


def test_the_board_is_judged_only_once_the_worker_is_seen_stopped(tmp_path, monkeypatch, workers):
    """A SIGSTOP that takes 0.3 s to show (a loaded machine): the picked slot enters ``release()``
    at 0.2 s, before its stop took hold; the pause must see that, not the board of 0.1 s."""
    from leasecheck.harness.faults import pause as pause_module

    board = SlotBoard(tmp_path / "slots.bin", workers=2, slots=1, create=True)
    worker_side = SlotBoard(tmp_path / "slots.bin", workers=2, slots=1)
    worker_side.hold(worker_side.index("w0.s0"), True)
    time.sleep(0.01)
    worker_side.hold(worker_side.index("w1.s0"), True)       # the most recent claimer: picked first
    real, first, entered = pause_module.is_stopped, [], []

    def slow_to_show(pid):
        now = time.monotonic()
        first.append(now) if not first else None
        if now - first[0] >= 0.2 and not entered:
            entered.append(now)
            worker_side.enter(worker_side.index("w1.s0"), "release")
        return real(pid) if now - first[0] >= 0.3 else False

    monkeypatch.setattr(pause_module, "is_stopped", slow_to_show)
    ctx = fault_ctx(tmp_path, HolderTable(board), workers)
    fault = Pause()
    active = fault.start(ctx, Step(at=0.0, fault="pause", target="holder", duration=0.1))
    monkeypatch.setattr(pause_module, "is_stopped", real)
    measured = fault.stop(ctx, active)
    assert (measured["slot"], measured["held"], measured["retries"]) == ("w0.s0", True, 1)
    assert not stopped_within(workers[1].pid, 0.05)       # the releasing one was continued
