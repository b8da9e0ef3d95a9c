"""The claim loop of an asynchronous lease (``async def acquire/release/renew``): one asyncio task
per slot, all of a worker's slots on one event loop in one thread (``--slots N``: N tasks sharing
a loop and a process, where asyncio lock bugs live).

Each attempt, call, job and renewal is recorded exactly as the threaded loop records it
(``leasecheck.workloads.claim_loop``, ``docs/history.md``): an invocation before the call is
awaited, ``ok``/``fail`` when it returned, ``info`` when it raised; renewal every TTL/3 while the
job runs; the same seeded draws of keys, job durations and back-offs. The job and the back-off
are ``asyncio.sleep``, so one slot's job never holds up another slot's call. The hung-call watch
is told the task of each call, so a ``call_hung`` stack is that task's (``hung_watch``).

``run_slots`` runs the slots until each has finished; the worker waits on the handles it returns
as it waits on threads (a slot stuck in a call reported hung is left behind once time is up).
"""
from __future__ import annotations

import asyncio
import random
import threading
import traceback
from dataclasses import dataclass
from typing import Any, Callable

from leasecheck.events import (
    ACQUIRE, EFFECT, FAIL, F_EFFECT, INFO, INVOKE, JOB_END, JOB_START, LEASE_ERROR, OK, SLOT_CRASH)
from leasecheck.harness.run.slot_board import code, outcome
from leasecheck.workloads.claim_loop import Slot, _describe, renewal
from leasecheck.workloads.stall import TICK_S

POLL_S = 0.05    # how often a job's task looks whether hang:holder froze it


@dataclass
class AsyncSlot(Slot):
    """A ``Slot`` whose lease calls are awaited on the worker's event loop. ``wake`` is set when
    the worker is told to stop (``stop`` set), so a back-off ends at once. ``watch``: the worker's
    hung-call watch, told each call's task (``HungWatch.enter``), since the slots share one thread."""
    wake: asyncio.Event | None = None
    watch: Any = None

    async def run(self) -> None:
        keys = random.Random(f"{self.seed}:{self.process}:keys")
        jobs = random.Random(f"{self.seed}:{self.process}:jobs")
        delays = random.Random(f"{self.seed}:{self.process}:delays")
        draw_duration = self.job_duration.job_draws(self.seed, self.job_numbers)
        n = 0
        while not self.stop.is_set() and self.history.now() < self.deadline_ns:
            key = self.keys[keys.randrange(len(self.keys))]
            attempt = f"{self.process}.{n}"
            n += 1
            if await self._attempt(attempt, key, lambda: draw_duration(jobs)):
                continue
            delay = self.retry_delay.sample(delays)
            if delay > 0:
                await self._back_off(delay)
            else:
                await asyncio.sleep(0)   # let the other slots run: an acquire that fails fast never yields

    async def _back_off(self, delay: float) -> None:
        if self.wake is None:
            await asyncio.sleep(delay)
            return
        try:
            await asyncio.wait_for(self.wake.wait(), delay)
        except TimeoutError:
            pass

    async def _attempt(self, attempt: str, key: str, draw_duration: Callable[[], float]) -> bool:
        try:
            lease = self.lease_factory(self.client, key, self.ttl_ms)
        except Exception as e:
            self.history.record(self.process, LEASE_ERROR, attempt=attempt, key=key,
                                error=_describe(e), sent=self.tracker.drain())
            return False
        got = await self._call(lease.acquire, "acquire", attempt, key)
        if got is not True:
            return False
        self.record.hold(True)
        try:
            await self._job(lease, attempt, key, draw_duration())
            await self._call(lease.release, "release", attempt, key)
        finally:
            self.record.hold(False)
        return True

    async def _job(self, lease, attempt: str, key: str, duration: float) -> None:
        loop = asyncio.get_running_loop()
        renew = renewal(lease)
        period = self.ttl_ms / 3000.0
        start = loop.time()
        end = start + duration
        next_renew = start + period
        self.history.record(self.process, JOB_START, attempt=attempt, key=key)
        stall = self.stall
        if stall is not None:
            stall.job(self.process, True)
        aborted = frozen = False
        while True:
            now = loop.time()
            if stall is not None:    # hang:holder: no progress while frozen
                end, frozen = stall.moved_end(self.process, now, end)
            if now >= end:
                break
            if callable(renew) and now >= next_renew:
                if await self._call(renew, "renew", attempt, key) is not True:
                    aborted = True
                    break
                self.record.hold(True)     # a renewal: the board's deadline moved
                next_renew += period
                continue
            wake = min(end, next_renew) if callable(renew) else end
            if stall is not None:   # a task cannot wait on the freeze's thread event: look often
                wake = min(wake, now + (TICK_S if frozen else POLL_S))
            await asyncio.sleep(max(0.0, wake - now))
        if stall is not None:
            stall.job(self.process, False)
        if not aborted:
            await self._effect(lease, attempt, key)
        self.history.record(self.process, JOB_END, attempt=attempt, key=key, aborted=aborted)

    async def _effect(self, lease, attempt: str, key: str) -> None:
        if self.sink is None:
            self.history.record(self.process, EFFECT, attempt=attempt, key=key)
            return
        fence = getattr(lease, "fence", None)
        self.history.record(self.process, INVOKE, f=F_EFFECT, attempt=attempt, key=key, fence=fence)
        try:   # the sink's client is the harness's synchronous one: off the loop
            accepted = await asyncio.to_thread(self.sink.write, key, fence)
        except Exception as e:
            self.history.record(self.process, INFO, f=F_EFFECT, attempt=attempt, key=key,
                                fence=fence, error=_describe(e), sent=self.tracker.drain())
            return
        self.history.record(self.process, OK, f=F_EFFECT, attempt=attempt, key=key, fence=fence,
                            value=accepted, sent=self.tracker.drain())
        self.history.record(self.process, EFFECT, attempt=attempt, key=key, fence=fence,
                            fenced_accepted=accepted)

    async def _call(self, fn, f: str, attempt: str, key: str):
        """Await one lease call between an invocation and a completion; None when it raised."""
        invoked = self.history.record(self.process, INVOKE, f=f, attempt=attempt, key=key)
        self.tracker.begin(attempt, f, key, invoked)     # a context variable: this task's own
        self.record.enter(code(f))
        watch = self.watch
        if watch is not None:
            watch.enter(self.process, attempt, f, key, invoked, task=asyncio.current_task())
        try:
            value = bool(await fn())
        except Exception as e:
            if watch is not None:
                watch.leave(self.process)
            self.record.leave(outcome(f, None))
            self.history.record(self.process, INFO, f=f, attempt=attempt, key=key,
                                error=_describe(e), sent=self.tracker.drain())
            return None
        if watch is not None:
            watch.leave(self.process)
        self.record.leave(outcome(f, value))
        kind = FAIL if (f == ACQUIRE and not value) else OK
        self.history.record(self.process, kind, f=f, attempt=attempt, key=key, value=value,
                            sent=self.tracker.drain())
        return value


class TaskHandle:
    """A slot's task seen from the worker's main thread, as a thread would be: ``name``,
    ``is_alive()``, ``join(timeout)``."""

    def __init__(self, name: str):
        self.name = name
        self.done = threading.Event()

    def is_alive(self) -> bool:
        return not self.done.is_set()

    def join(self, timeout: float | None = None) -> None:
        self.done.wait(timeout)


def run_slots(slots: list[AsyncSlot], stop: threading.Event) -> tuple[threading.Thread, list[TaskHandle]]:
    """Start one thread running one event loop with a task per slot; returns the thread and a
    handle per slot. The loop ends when every slot has (a slot left hung keeps it going: the
    worker then exits without waiting)."""
    handles = [TaskHandle(s.process) for s in slots]

    async def one(slot: AsyncSlot, handle: TaskHandle) -> None:
        try:
            await slot.run()
        except BaseException as e:   # our own bug: leave a trace in the history and on stderr
            traceback.print_exc()
            slot.history.record(slot.process, SLOT_CRASH, error=f"{type(e).__name__}: {e}"[:300])
        finally:
            handle.done.set()

    async def main() -> None:
        wake = asyncio.Event()
        loop = asyncio.get_running_loop()
        threading.Thread(target=_wake_on, args=(stop, loop, wake), name="async-stop", daemon=True).start()
        for s in slots:
            s.wake = wake
        await asyncio.gather(*(asyncio.create_task(one(s, h), name=s.process) for s, h in zip(slots, handles)))

    thread = threading.Thread(target=asyncio.run, args=(main(),), name="asyncio-slots")
    thread.start()
    return thread, handles


def _wake_on(stop: threading.Event, loop: asyncio.AbstractEventLoop, wake: asyncio.Event) -> None:
    """Set ``wake`` on its loop once ``stop`` is set (nothing, if the loop has ended by then)."""
    stop.wait()
    try:
        loop.call_soon_threadsafe(wake.set)
    except RuntimeError:   # the loop is closed: every slot has ended
        pass
