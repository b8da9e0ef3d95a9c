"""`kill:holder` kills the holder only once its own history file shows the claim the slot board
says it holds (or after a bound): the worker writes its history every 50 ms, later when the machine
is loaded, and a SIGKILL loses what is still in its buffer — the dying attempt with it. A holder
that let go meanwhile is spared and the kill aims again; ``held`` is what the board said at the kill."""
import threading
import time

import orjson

from leasecheck.harness.faults import kill_holder
from leasecheck.harness.faults.base import Step
from leasecheck.harness.faults.kill_holder import _on_file, died
from leasecheck.harness.run.holders import HolderTable
from leasecheck.harness.run.slot_board import SlotBoard
from leasecheck.rundir import RunFiles
from tests.faults.conftest import fault_ctx


def _line(**e) -> bytes:
    return orjson.dumps(e) + b"\n"


def test_it_waits_for_the_flush_that_writes_the_holders_acquire(tmp_path):
    path = tmp_path / "w1.jsonl"
    path.write_bytes(_line(process="w1.s0", type="invoke", f="acquire", attempt="w1.s0.3", key="k")
                     + _line(process="w1.s0", type="fail", f="acquire", attempt="w1.s0.3", value=False))
    written = []

    def flush_later():
        time.sleep(0.2)
        with path.open("ab") as f:
            f.write(_line(process="w1.s0", type="invoke", f="acquire", attempt="w1.s0.4", key="k")
                    + _line(process="w1.s0", type="ok", f="acquire", attempt="w1.s0.4", value=True))
        written.append(time.monotonic())

    t = threading.Thread(target=flush_later)
    t.start()
    assert _on_file(path, ["w1.s0"], time.monotonic() + 30) is True
    done = time.monotonic()
    t.join()
    assert written and done >= written[0]          # not before the flush came
    assert died(path) == ["w1.s0.4"]


def test_it_gives_up_at_its_deadline_and_the_kill_goes_ahead(tmp_path):
    path = tmp_path / "w2.jsonl"
    path.write_bytes(_line(process="w2.s0", type="invoke", f="acquire", attempt="w2.s0.1", key="k"))
    t0 = time.monotonic()
    assert _on_file(path, ["w2.s1"], t0 + 0.1) is False      # the other slot's attempt never came
    assert time.monotonic() >= t0 + 0.1
    assert _on_file(tmp_path / "absent.jsonl", ["w2.s0"], time.monotonic()) is False


class _LetsGoWhileItsClaimIsFlushed(HolderTable):
    """w0.s0 holds the claim that came last; by the time that claim is on w0's file its job has
    ended (its board record no longer holds, the first time the kill looks), while w1.s0 holds one."""
    def __init__(self, board):
        super().__init__(board)
        self.looks = 0

    def slot(self, process):
        if process == "w0.s0" and self.looks == 0:
            self.looks += 1
            self.board.hold(self.board.index("w0.s0"), False)
        return super().slot(process)


def _history_parts(tmp_path):
    parts = RunFiles(tmp_path).part("w0").parent
    parts.mkdir(parents=True)
    for w in ("w0", "w1"):
        (parts / f"{w}.jsonl").write_bytes(
            _line(process=f"{w}.s0", type="invoke", f="acquire", attempt=f"{w}.s0.1", key="k")
            + _line(process=f"{w}.s0", type="ok", f="acquire", attempt=f"{w}.s0.1", value=True))


def test_a_holder_that_let_go_while_its_claim_was_flushed_is_spared_and_the_next_holder_killed(tmp_path, workers):
    _history_parts(tmp_path)
    board = SlotBoard(tmp_path / "slots.bin", workers=2, slots=1, create=True)
    board.hold(board.index("w1.s0"), True)
    time.sleep(0.01)
    board.hold(board.index("w0.s0"), True)            # the claim that came last
    ctx = fault_ctx(tmp_path, _LetsGoWhileItsClaimIsFlushed(board), workers)
    ctx.record = None
    active = kill_holder.start(ctx, Step(at=0.0, fault="kill", target="holder", duration=0.1))
    assert active.data["worker"] == 1 and active.data["held"] is True and active.data["slots"] == ["w1.s0"]
    assert workers[1].poll() == -9 and workers[0].poll() is None      # w0 spared
    assert active.data["attempts"] == ["w1.s0.1"]


def test_held_is_what_the_board_said_at_the_kill(tmp_path, workers):
    """No other holder comes within the 2 s: the last pick (w0) is killed, and held is false —
    it had let go of its claim before the kill."""
    _history_parts(tmp_path)
    board = SlotBoard(tmp_path / "slots.bin", workers=2, slots=1, create=True)
    board.hold(board.index("w0.s0"), True)

    class LetsGoForGood(HolderTable):
        def slot(self, process):
            self.board.hold(self.board.index("w0.s0"), False)
            return super().slot(process)

        def wait_for_holding_slot(self, timeout_s, fresh_s=None):
            found = super().wait_for_holding_slot(0.0)
            if found is None:
                self.board.hold(self.board.index("w0.s0"), True)   # w0 claims again at once
                found = super().wait_for_holding_slot(0.0)
            return found
    ctx = fault_ctx(tmp_path, LetsGoForGood(board), workers)
    ctx.record = None
    t = time.monotonic()
    active = kill_holder.start(ctx, Step(at=0.0, fault="kill", target="holder", duration=0.1))
    assert time.monotonic() - t >= kill_holder.WAIT_S - 0.05
    assert active.data["worker"] == 0 and active.data["held"] is False and workers[0].poll() == -9
