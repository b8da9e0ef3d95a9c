"""Pauses aimed at lease calls: the slots' shared board tells the holder table who is inside
which call, and ``pause:releaser`` stops that worker while its release is in flight."""
import random
import threading
import time
from types import SimpleNamespace

import pytest

from leasecheck.harness.errors import UsageError
from leasecheck.harness.faults import FAULTS, nemesis_entries
from leasecheck.harness.faults.pause import AIMED
from leasecheck.harness.record.connection import SendTracker
from leasecheck.harness.run.holders import HolderTable, worker_index
from leasecheck.harness.run.slot_board import SlotBoard, SlotRecord
from leasecheck.harness.settings.durations import parse_distribution
from leasecheck.workloads.claim_loop import Slot


def _cfg(**kw):
    return SimpleNamespace(**{"ttl_s": 1.0, "store_url": None, "backend": "embedded", "audit": True, **kw})


def test_the_pause_module_declares_the_aimed_targets():
    assert {"releaser", "acquirer", "renewer"} <= set(FAULTS["pause"].targets)
    assert AIMED == {"releaser": "release", "acquirer": "acquire", "renewer": "renew"}
    assert {"in_call", "slot", "waited_s"} <= set(FAULTS["pause"].measures)
    assert nemesis_entries("pause:releaser,latency", _cfg()) == [("pause", "releaser", None),
                                                                ("latency", "workers", None)]
    # a worker is a process the harness started even with --store-url: no store refusal applies
    assert nemesis_entries("pause:renewer", _cfg(store_url="redis://127.0.0.1:1/0"))[0][1] == "renewer"
    with pytest.raises(UsageError, match="pause targets are"):
        nemesis_entries("pause:deleter", _cfg())


def test_the_table_knows_who_is_inside_which_call(tmp_path):
    board = SlotBoard(tmp_path / "slots.bin", workers=4, slots=2, create=True)
    worker_side = SlotBoard(tmp_path / "slots.bin", workers=4, slots=2)   # another mapping
    t = HolderTable(board)
    for process, call in (("w1.s0", "acquire"), ("w3.s1", "release"), ("w2.s0", "release")):
        worker_side.enter(worker_side.index(process), call)
    found = t.wait_for_call("release", timeout_s=0.1)
    assert found[0] == "w2.s0"                       # the one that entered last
    assert worker_index(found[0]) == 2
    assert t.still_in(*found)
    worker_side.leave(worker_side.index("w2.s0"))
    assert not t.still_in(*found)
    worker_side.enter(worker_side.index("w2.s0"), "release")   # the slot's next release is another call
    assert not t.still_in(*found)
    assert t.wait_for_call("renew", timeout_s=0.05) is None
    assert t.wait_for_call("acquire", timeout_s=0.05)[0] == "w1.s0"
    assert t.holders() == [] and t.wait_for_holding_slot(0.01) is None
    worker_side.leave(worker_side.index("w1.s0"))
    worker_side.leave(worker_side.index("w3.s1"))
    worker_side.hold(worker_side.index("w1.s0"), True)
    worker_side.hold(worker_side.index("w3.s1"), True)
    assert t.holders() == [1, 3]
    assert t.wait_for_holding_slot(0.01)[0] == "w3.s1"   # the most recent claimer
    worker_side.enter(worker_side.index("w3.s1"), "release")
    assert t.holders() == [1, 3]
    assert t.wait_for_holding_slot(0.01)[0] == "w1.s0"   # not one handing its claim back
    worker_side.enter(worker_side.index("w1.s0"), "release")
    assert t.wait_for_holding_slot(0.01) is None
    worker_side.leave(worker_side.index("w3.s1"))
    worker_side.hold(worker_side.index("w3.s1"), False)
    assert t.holders() == [1]


def test_a_release_aim_passes_over_a_claim_past_its_deadline_but_not_a_renewed_one(tmp_path):
    # The release of a job that outlived its claim has nothing left for a pause to expire: the
    # releaser aim wants a release whose claim has a quarter TTL or more left, counted from when it
    # was taken or last renewed (a renewal stamps `renewed`, not `since`).
    board = SlotBoard(tmp_path / "slots.bin", workers=3, slots=1, create=True)
    t = HolderTable(board)
    on_call, on_hold = board.writers(0)
    on_hold("w0.s0", True)                  # w0 claimed 0.3 s ago with a 0.2 s TTL: past its deadline
    time.sleep(0.3)
    on_call("w0.s0", "release")
    assert t.wait_for_call("release", timeout_s=0.01)[0] == "w0.s0"          # no filter: any release
    assert t.wait_for_call("release", timeout_s=0.05, live_s=0.05, ttl_s=0.2) is None
    board.enter(1, "release")               # w1 is in a release but holds nothing: passed over too
    assert t.wait_for_call("release", timeout_s=0.01, live_s=0.05, ttl_s=0.2) is None
    since = t.slot("w0.s0")[3]
    on_call("w0.s0", None)
    on_hold("w0.s0", True)                  # a renewal that succeeded: the claim is the same one
    assert t.slot("w0.s0")[3] == since and t.still_holds("w0.s0", since)
    on_call("w0.s0", "release")
    assert t.wait_for_call("release", timeout_s=0.01, live_s=0.05, ttl_s=0.2)[0] == "w0.s0"
    board.hold(2, True)
    board.enter(2, "release")               # w2 claimed just now and entered its release last
    assert t.wait_for_call("release", timeout_s=0.01, live_s=0.05, ttl_s=0.2)[0] == "w2.s0"
    threading.Timer(0.05, board.hold, [1, True]).start()   # the waiting sees w1's claim arrive
    assert t.wait_for_call("release", timeout_s=2.0, live_s=0.05, ttl_s=0.2, exclude={("w2.s0", 1)},
                           )[0] in ("w1.s0", "w0.s0")
    on_hold("w0.s0", False)
    on_hold("w0.s0", True)                  # a new claim after letting go: since moves
    assert t.slot("w0.s0")[3] > since


def test_waiting_for_a_call_wakes_when_one_starts(tmp_path):
    board = SlotBoard(tmp_path / "slots.bin", workers=6, slots=1, create=True)
    t = HolderTable(board)
    threading.Timer(0.05, board.enter, [5, "renew"]).start()
    start = time.monotonic()
    assert t.wait_for_call("renew", timeout_s=2.0)[0] == "w5.s0"
    assert time.monotonic() - start < 1.0


def test_a_table_without_a_board_knows_nobody():
    t = HolderTable()
    assert t.holders() == [] and t.wait_for_call("release", 0.01) is None and not t.still_in("w0.s0", 1)


def test_a_slot_reports_entering_and_leaving_each_call():
    said = []
    record = SlotRecord.alone()

    class Lease:
        def __init__(self, *_):
            pass

        def acquire(self):
            said.append(("inside", record.call()[:2]))
            return True

        def release(self):
            said.append(("inside", record.call()[:2]))
            raise ConnectionError("reply lost")       # an unknown outcome still reports leaving

    history = SimpleNamespace(record=lambda *a, **k: 0, now=lambda: 0)   # record() returns the time
    tracker = SendTracker("w0.s0")
    slot = Slot(process="w0.s0", history=history, tracker=tracker, client=None, lease_factory=Lease,
                keys=["k"], ttl_ms=1000, job_duration=parse_distribution("0s"),
                retry_delay=SimpleNamespace(sample=lambda r: 0.0), seed=1, deadline_ns=1, stop=threading.Event(),
                record=record)
    assert slot._attempt("w0.s0.0", "k", lambda _jobs: 0.0, random.Random(0)) is True
    # inside each call the record names it (acquire 1, release 2) with its number; leaving, each
    # call counts what it is: the acquire won, the release raised (its outcome unknown: counted as
    # nothing, the board counts only acquires that raised)
    assert said == [("inside", (1, 1)), ("inside", (2, 2))]
    assert record.call()[:2] == (0, 2)
    assert record.fields()[7:] == (1, 0, 0, 0)     # won, lost, unknown, nothing
    assert record.fields()[1] == 0                 # holding no more


def _ctx(tmp_path, table, workers):
    import random

    from leasecheck.harness.faults import FaultContext
    from leasecheck.harness.nemesis.heal import Ledger
    return FaultContext(cfg=SimpleNamespace(backend="embedded", ttl_s=1.0), run_dir=tmp_path, ledger=Ledger(tmp_path),
                        workers=workers, holders=table, rng=random.Random(1))


@pytest.fixture
def two_workers():
    import subprocess
    procs = [subprocess.Popen(["sleep", "30"]) for _ in range(2)]
    yield procs
    for p in procs:
        p.kill()        # SIGKILL ends a stopped process too
        p.wait()


def test_a_releaser_pause_stops_that_worker_and_measures_whether_it_landed_in_the_call(tmp_path, two_workers):
    from leasecheck.harness.faults.base import Step
    from leasecheck.harness.run.procfs import is_stopped
    pause = FAULTS["pause"]
    board = SlotBoard(tmp_path / "slots.bin", workers=2, slots=1, create=True)
    table = HolderTable(board)
    board.hold(1, True)                # a release hands back a claim it holds
    board.enter(1, "release")
    ctx = _ctx(tmp_path, table, two_workers)
    act = pause.start(ctx, Step(0, "pause", "releaser", 0.2))
    time.sleep(0.1)
    assert is_stopped(two_workers[1].pid) and not is_stopped(two_workers[0].pid)
    m = pause.stop(ctx, act)
    assert not is_stopped(two_workers[1].pid)
    assert m["processes"] == ["w1"] and m["slot"] == "w1.s0" and m["in_call"] is True

    board.leave(1)
    board.hold(0, True)
    board.enter(0, "release")
    act = pause.start(ctx, Step(0, "pause", "releaser", 0.2))
    board.leave(0)                     # it had left the call before the stop took hold
    m = pause.stop(ctx, act)
    assert m["processes"] == ["w0"] and m["in_call"] is False
