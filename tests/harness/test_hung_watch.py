"""The worker's watch of lease calls: a call still running past the bound is reported once, with
the stack of its own thread from the lease's frame inward; time the process spent stopped is not
counted; a call that returned is never reported."""
import threading
import time

from leasecheck.events import CALL_HUNG
from leasecheck.harness.run.hung_watch import HungWatch


class Recorder:
    def __init__(self):
        self.events = []

    def record(self, process, type, **fields):
        self.events.append((process, type, fields))
        return 0


def wrapper(fn):          # stands for the claim loop's `Slot._call`
    return fn()


def stuck_lease_call(release: threading.Event, entered: threading.Event):
    entered.set()
    release.wait(10)      # the stuck line


def test_a_call_past_the_bound_is_reported_once_with_its_own_stack():
    rec = Recorder()
    watch = HungWatch(rec, 0.05, wrapper.__code__)
    release, entered = threading.Event(), threading.Event()

    def slot():
        watch.enter("w0.s0", "w0.s0.3", "acquire", "job:0", 123)
        wrapper(lambda: stuck_lease_call(release, entered))
        watch.leave("w0.s0")

    t = threading.Thread(target=slot)
    t.start()
    entered.wait(5)
    time.sleep(0.06)
    watch.check(time.monotonic_ns())
    watch.check(time.monotonic_ns())
    assert watch.hung("w0.s0")
    release.set()
    t.join(5)
    (process, kind, fields), = rec.events
    assert process == "w0.s0" and kind == CALL_HUNG and fields["attempt"] == "w0.s0.3" and fields["invoked"] == 123
    assert fields["f"] == "acquire" and fields["running_s"] >= 0.05 and fields["bound_s"] == 0.05
    stack = fields["stack"]
    assert "in stuck_lease_call" in stack and "release.wait(10)" in stack
    assert "in wrapper" not in stack and "in slot" not in stack and "<lambda>" in stack
    assert not watch.hung("w0.s0")                    # it left the call


def test_a_call_that_returned_and_time_spent_stopped_are_not_hung():
    rec = Recorder()
    watch = HungWatch(rec, 1.0)
    watch.enter("w0.s0", "w0.s0.0", "release", "job:0", 0)
    watch._frozen += int(5e9)                         # the process was stopped 5 s meanwhile
    watch.check(time.monotonic_ns() + int(5.5e9))     # 5.5 s later, 5 s of which frozen: 0.5 s of 1 s
    watch.leave("w0.s0")
    watch.check(time.monotonic_ns() + int(60e9))
    assert rec.events == []
