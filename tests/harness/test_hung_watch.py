"""The worker's watch of lease calls: a call still running past the bound is reported once, with
the stack of its own thread from the lease's frame inward; time the process spent stopped is not
counted; a call that returned is never reported."""
import threading
import time

from leasecheck.events import CALL_HUNG
from leasecheck.harness.run.hung_watch import HungWatch, stops_of
from leasecheck.harness.run.slot_board import SlotBoard, code


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
    watch = HungWatch(rec, 0.05, stops_of(wrapper))
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


class FollowedSlot:
    """A threaded slot as the watch follows it: its record on a board, and ``current``."""

    def __init__(self, record):
        self.record, self.thread, self.last = record, 0, None

    def current(self):
        return self.thread, self.last

    def call(self, f, attempt, key, invoked, fn):     # what Slot._call does around a lease call
        self.thread, self.last = threading.get_ident(), (f, attempt, key, invoked)
        self.record.enter(code(f))
        try:
            return wrapper(fn)
        finally:
            self.record.leave()


def test_a_followed_slots_call_past_the_bound_is_reported_once_from_its_record(tmp_path):
    rec = Recorder()
    watch = HungWatch(rec, 0.05, stops_of(wrapper))
    board = SlotBoard(tmp_path / "slots.bin", workers=1, slots=2, create=True)
    stuck, quick = FollowedSlot(board.record(1)), FollowedSlot(board.record(0))
    watch.follow("w0.s1", stuck.record, stuck.current)
    watch.follow("w0.s0", quick.record, quick.current)
    release, entered = threading.Event(), threading.Event()
    t = threading.Thread(target=stuck.call, args=("release", "w0.s1.7", "job:2", 456,
                                                    lambda: stuck_lease_call(release, entered)))
    t.start()
    entered.wait(5)
    quick.call("acquire", "w0.s0.0", "job:0", 1, lambda: True)     # returned: never reported
    time.sleep(0.06)
    watch.check(time.monotonic_ns())
    watch.check(time.monotonic_ns())
    assert watch.hung("w0.s1") and not watch.hung("w0.s0")
    release.set()
    t.join(5)
    (process, kind, fields), = rec.events
    assert process == "w0.s1" and kind == CALL_HUNG and fields["attempt"] == "w0.s1.7"
    assert (fields["f"], fields["key"], fields["invoked"]) == ("release", "job:2", 456)
    assert fields["running_s"] >= 0.05 and fields["bound_s"] == 0.05
    stack = fields["stack"]
    assert "in stuck_lease_call" in stack and "release.wait(10)" in stack and "in wrapper" not in stack
    assert not watch.hung("w0.s1")                    # it left the call
    # the same slot's next call is a call of its own: reported again once it hangs
    release2, entered2 = threading.Event(), threading.Event()
    t = threading.Thread(target=stuck.call, args=("acquire", "w0.s1.8", "job:3", 789,
                                                    lambda: stuck_lease_call(release2, entered2)))
    t.start()
    entered2.wait(5)
    watch.stopped(int(5e9), time.monotonic_ns())      # stopped 5 s while inside it: not its own time
    watch.check(time.monotonic_ns() + int(4.9e9))
    assert len(rec.events) == 1
    watch.check(time.monotonic_ns() + int(5.2e9))
    release2.set()
    t.join(5)
    assert [e[2]["attempt"] for e in rec.events] == ["w0.s1.7", "w0.s1.8"]
    board.close()


def test_a_followed_call_that_moved_on_while_looked_at_is_not_reported(tmp_path):
    rec = Recorder()
    watch = HungWatch(rec, 0.05)
    board = SlotBoard(tmp_path / "slots.bin", workers=1, slots=1, create=True)
    slot = FollowedSlot(board.record(0))
    slot.record.enter(code("acquire"))
    slot.last = ("acquire", "w0.s0.0", "job:0", 5)
    calls = iter([None])

    def current():       # the slot leaves its call and enters the next while the watch reads it
        if next(calls, 1) is None:
            slot.record.leave()
            slot.record.enter(code("release"))
        return slot.thread, ("release", "w0.s0.0", "job:0", 9)
    watch.follow("w0.s0", slot.record, current)
    watch.check(time.monotonic_ns() + int(1e9))
    assert rec.events == []
    watch.check(time.monotonic_ns() + int(1e9))      # the release, hung from the next look
    (_, _, fields), = rec.events
    assert (fields["f"], fields["invoked"]) == ("release", 9)
    board.close()


def test_a_call_that_returned_and_time_spent_stopped_are_not_hung():
    rec = Recorder()
    watch = HungWatch(rec, 1.0)
    watch.enter("w0.s0", "w0.s0.0", "release", "job:0", 0)
    watch.stopped(int(5e9), time.monotonic_ns())      # the process was stopped 5 s meanwhile
    watch.check(time.monotonic_ns() + int(5.5e9))     # 5.5 s later, 5 s of which frozen: 0.5 s of 1 s
    watch.leave("w0.s0")
    watch.check(time.monotonic_ns() + int(60e9))
    assert rec.events == []


async def async_wrapper(fn):      # stands for the asyncio claim loop's `AsyncSlot._call`
    return await fn()


async def awaiting_lease_call(never):
    await never                   # the stuck await


async def blocking_lease_call(release: threading.Event, entered: threading.Event):
    entered.set()
    release.wait(10)              # a blocking call inside async def: the loop's thread is stuck here


def _watched_task(watch, coro_fn, *args):
    """Run ``coro_fn`` as a call of slot w0.s0 on a loop in a thread of its own; returns
    (thread, loop-started event, a future to end it)."""
    import asyncio
    state = {}
    started = threading.Event()

    async def slot():
        loop = asyncio.get_running_loop()
        state["never"] = loop.create_future()
        state["loop"] = loop
        task = asyncio.current_task()
        watch.enter("w0.s0", "w0.s0.5", "release", "job:1", 77, task=task)
        started.set()
        try:
            await async_wrapper(lambda: coro_fn(state["never"], *args) if coro_fn is awaiting_lease_call
                                else coro_fn(*args))
        except asyncio.CancelledError:
            pass
        watch.leave("w0.s0")

    t = threading.Thread(target=lambda: asyncio.run(slot()))
    t.start()
    started.wait(5)
    return t, state


def test_an_asynchronous_call_suspended_in_an_await_is_reported_with_the_tasks_stack():
    rec = Recorder()
    watch = HungWatch(rec, 0.05, stops_of(async_wrapper))
    t, state = _watched_task(watch, awaiting_lease_call)
    time.sleep(0.1)
    watch.check(time.monotonic_ns())
    state["loop"].call_soon_threadsafe(state["never"].cancel)
    t.join(5)
    (process, kind, fields), = rec.events
    assert kind == CALL_HUNG and fields["attempt"] == "w0.s0.5" and fields["f"] == "release"
    stack = fields["stack"]
    assert "in awaiting_lease_call" in stack and "await never" in stack
    assert "in async_wrapper" not in stack and "in slot" not in stack


def test_an_asynchronous_call_blocking_the_loop_is_reported_with_the_threads_stack():
    rec = Recorder()
    watch = HungWatch(rec, 0.05, stops_of(async_wrapper))
    release, entered = threading.Event(), threading.Event()
    t, _ = _watched_task(watch, blocking_lease_call, release, entered)
    entered.wait(5)
    time.sleep(0.1)
    watch.check(time.monotonic_ns())
    release.set()
    t.join(5)
    (process, kind, fields), = rec.events
    stack = fields["stack"]
    assert "in blocking_lease_call" in stack and "release.wait(10)" in stack
    assert "in async_wrapper" not in stack and "in slot" not in stack


def test_close_stops_the_watch_before_what_it_reads_is_closed(tmp_path, monkeypatch):
    """The watch sleeps half a second between looks; ``close`` wakes it and waits for it, so a
    board closed right after is never read by a look already under way."""
    errors = []
    monkeypatch.setattr(threading, "excepthook", lambda args: errors.append(args.exc_value))
    board = SlotBoard(tmp_path / "slots.bin", 1, 1, create=True)
    record = board.record(0)
    record.enter(code("acquire"))
    watch = HungWatch(Recorder(), 30.0).start()
    watch.follow("w0.s0", record, lambda: (threading.get_ident(), ("acquire", "w0.s0.0", "job:0", 0)))
    assert watch.period_s == 0.5
    watch.close()
    assert not watch._loop_thread.is_alive()
    record.release()
    board.close()
    time.sleep(0.6)           # past the look the watch would have taken
    assert errors == []
