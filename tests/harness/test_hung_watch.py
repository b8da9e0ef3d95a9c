"""The worker's watch of lease calls: a call still running past the bound is reported once, with
the stack of its own thread from the lease's frame inward; time the process spent stopped is not
counted; a call that returned is never reported."""
import threading
import time

from leasecheck.events import CALL_HUNG
from leasecheck.harness.run.hung_watch import HungWatch, stops_of


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


def test_a_call_that_returned_and_time_spent_stopped_are_not_hung():
    rec = Recorder()
    watch = HungWatch(rec, 1.0)
    watch.enter("w0.s0", "w0.s0.0", "release", "job:0", 0)
    watch._frozen += int(5e9)                         # the process was stopped 5 s meanwhile
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
