"""The clock fault's file protocol, without processes: offsets written, strobed, healed."""
import random
import threading
import time
from types import SimpleNamespace

from leasecheck.harness.faults import FAULTS, FaultContext, Step
from leasecheck.harness.faults.clock import write_offset
from leasecheck.harness.run.host import faketime_env, libfaketime_path
from leasecheck.harness.nemesis.driver import random_schedule
from leasecheck.harness.nemesis.heal import Ledger
from leasecheck.harness.run.holders import HolderTable
from leasecheck.harness.run.slot_board import SlotBoard
from leasecheck.harness.stores.node import Node, NodeFiles


def _ctx(tmp_path):
    cfg = SimpleNamespace(ttl_s=1.0, store_url=None)
    admin = SimpleNamespace(time=lambda: (_ for _ in ()).throw(RuntimeError("no store")))
    (tmp_path / "faketime").mkdir()
    files = NodeFiles.of(tmp_path, "node1", alone=True)
    faketime_env(files.faketime)
    node = Node("node1", SimpleNamespace(faketime_file=files.faketime), files, admin=admin)
    return FaultContext(cfg=cfg, run_dir=tmp_path, ledger=Ledger(tmp_path), workers=[], holders=None,
                        rng=random.Random(1), nodes=[node], faketime_dir=tmp_path / "faketime")


def test_libfaketime_ships_with_the_wheel():
    assert libfaketime_path().endswith("libfaketime.so.1")


def test_bump_writes_the_offset_and_heals_to_zero(tmp_path):
    ctx = _ctx(tmp_path)
    clock = FAULTS["clock"]
    active = clock.start(ctx, Step(0, "clock", "store", 1.0, size=2.5))
    path = tmp_path / "faketime" / "store"
    assert float(path.read_text()) == 2.5
    assert (tmp_path / "faults-active.json").exists()      # the undo is written down first
    measured = clock.stop(ctx, active)
    assert float(path.read_text()) == 0.0 and measured["offsets_s"] == {"store": 2.5}
    assert not (tmp_path / "faults-active.json").exists()


def test_strobe_flips_between_offset_and_zero(tmp_path):
    ctx = _ctx(tmp_path)
    clock = FAULTS["clock"]
    path = tmp_path / "faketime" / "store"
    active = clock.start(ctx, Step(0, "clock", "store", 1.0, size=-3.0,
                                   params={"mode": "strobe", "period": 0.02}))
    seen = set()
    end = time.monotonic() + 0.5
    while time.monotonic() < end:
        try:
            seen.add(float(path.read_text()))
        except ValueError:
            pass
        time.sleep(0.003)
    clock.stop(ctx, active)
    assert seen == {-3.0, 0.0}
    assert float(path.read_text()) == 0.0


def test_offsets_are_written_atomically(tmp_path):
    p = tmp_path / "f"
    write_offset(p, 1.25)
    assert p.read_text() == "+1.250000\n"
    write_offset(p, -0.5)
    assert p.read_text() == "-0.500000\n"


class _Holders:
    """A holder table whose first claim is held ``after_s`` after the wait began (never: None)."""
    def __init__(self, after_s):
        self.after_s, self.waits = after_s, []

    def wait_for_holding_slot(self, timeout_s, fresh_s=None):
        self.waits.append(timeout_s)
        self.fresh_s = fresh_s
        if self.after_s is None or self.after_s > timeout_s:
            time.sleep(timeout_s)
            return None
        time.sleep(self.after_s)
        return "w3.s0", time.monotonic_ns()


def test_a_forward_store_jump_waits_for_a_held_claim_and_names_its_holder(tmp_path):
    ctx = _ctx(tmp_path)
    ctx.holders = _Holders(after_s=0.2)
    clock = FAULTS["clock"]
    t = time.monotonic()
    active = clock.start(ctx, Step(0, "clock", "store", 1.0, size=2.5))
    assert time.monotonic() - t >= 0.2 and float((tmp_path / "faketime" / "store").read_text()) == 2.5
    measured = clock.stop(ctx, active)
    assert measured["holder"] == "w3.s0" and 0.2 <= measured["waited_s"] < 1.0
    assert ctx.holders.fresh_s is None and 0 <= measured["held_for_s"] < 0.1   # any held claim


def _fresh_aim_board(tmp_path):
    """w0.s0 has held its claim for 0.4 s of a 1 s TTL (its job may end any moment); w1.s0
    takes one 0.2 s after the jump began waiting."""
    board = SlotBoard(tmp_path / "slots.bin", workers=2, slots=1, create=True)
    board.hold(board.index("w0.s0"), True)
    time.sleep(0.4)
    return board, threading.Timer(0.2, lambda: board.hold(board.index("w1.s0"), True))


def test_a_fresh_aimed_jump_passes_over_a_claim_held_for_more_than_a_quarter_ttl(tmp_path):
    ctx = _ctx(tmp_path)
    board, timer = _fresh_aim_board(tmp_path)
    ctx.holders = HolderTable(board)
    timer.start()
    clock = FAULTS["clock"]
    measured = clock.stop(ctx, clock.start(ctx, Step(0, "clock", "store", 1.0, size=2.5, params={"aim": "fresh"})))
    timer.join()
    assert measured["holder"] == "w1.s0" and measured["waited_s"] >= 0.19
    assert 0 <= measured["held_for_s"] < 0.25


def test_a_scenario_jump_aims_at_any_held_claim(tmp_path):
    """Without ``aim = "fresh"`` the jump's time is the scenario author's: it lands at once on
    the claim held for 0.4 s."""
    ctx = _ctx(tmp_path)
    board, timer = _fresh_aim_board(tmp_path)
    ctx.holders = HolderTable(board)
    clock = FAULTS["clock"]
    measured = clock.stop(ctx, clock.start(ctx, Step(0, "clock", "store", 1.0, size=2.5)))
    assert measured["holder"] == "w0.s0" and measured["waited_s"] < 0.1 and measured["held_for_s"] >= 0.4


def test_a_random_schedule_aims_its_forward_store_jumps_at_fresh_claims():
    cfg = SimpleNamespace(ttl_s=1.0, time_limit_s=20.0)
    steps = random_schedule([("clock", "store", "forward"), ("clock", "store", "backward"),
                             ("clock", "workers")], cfg, random.Random(3), 2.0)
    forward = [s for s in steps if s.target == "store" and s.size > 0]
    others = [s for s in steps if s not in forward]
    assert forward and others
    assert all(s.params == {"aim": "fresh"} for s in forward) and all(s.params == {} for s in others)


def test_a_forward_store_jump_goes_ahead_when_no_claim_is_held_in_time(tmp_path, monkeypatch):
    from leasecheck.harness.faults import clock as clock_module
    monkeypatch.setattr(clock_module, "HOLDER_WAIT_S", 0.1)
    ctx = _ctx(tmp_path)
    ctx.holders = _Holders(after_s=None)
    clock = FAULTS["clock"]
    active = clock.start(ctx, Step(0, "clock", "store", 1.0, size=2.5))
    measured = clock.stop(ctx, active)
    assert ctx.holders.waits == [0.1] and measured["holder"] is None and measured["waited_s"] >= 0.1


def test_a_backward_jump_or_a_strobe_is_not_aimed(tmp_path):
    ctx = _ctx(tmp_path)
    ctx.holders = _Holders(after_s=0.0)
    clock = FAULTS["clock"]
    for step in (Step(0, "clock", "store", 1.0, size=-2.0),
                 Step(0, "clock", "store", 1.0, size=2.0, params={"mode": "strobe", "period": 0.02})):
        measured = clock.stop(ctx, clock.start(ctx, step))
        assert "holder" not in measured and "waited_s" not in measured and "held_for_s" not in measured
    assert ctx.holders.waits == []
