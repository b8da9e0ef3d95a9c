"""Hung lease calls, seen from inside the worker: a call still running after the run's call bound
(``--call-timeout``, ``RunConfig.call_bound_s``) is reported once, as a ``call_hung`` event with the
Python stack of the thread making it (``sys._current_frames``), while it is still stuck.

A threaded slot's calls are read from its record on the worker's slot board (``follow``: the
record says which call the slot is inside, its number and when it entered it, and the slot says
what that call is), so the slot's path spends nothing on the watch. A slot of the asynchronous loop
tells the watch when it enters and leaves a call (``enter`` / ``leave``: a dict write each), with
the call's task, since the slots share one thread. A daemon thread looks every tenth of the bound, at
least every ``PERIOD_S`` (a worker wakes for it at most 20 times a second, usually twice). Time the
whole process spent stopped (a ``pause`` fault's SIGSTOP) is not the lease's: when the watch's own
sleep overran by more than ``FROZEN_SLACK_S``, the overrun is counted as frozen and taken off the
running time of every call open across it. The stack shows the call's frames only: from the
lease method the claim loop called (its caller, one of ``stops``, is left out) to the innermost line.
A call of an asynchronous lease is a task on the worker's event loop (``enter(..., task=)``): its
stack is the task's chain of awaits from the lease's coroutine inward, or, when the task is the one
running on the loop's thread at that moment (a blocking call inside ``async def``), that thread's.
"""
from __future__ import annotations

import sys
import threading
import time
import traceback

from leasecheck.events import CALL_HUNG

PERIOD_S = 0.5           # the longest wait between two looks; MIN_PERIOD_S the shortest
MIN_PERIOD_S = 0.05
FROZEN_SLACK_S = 0.5
CLOSE_WAIT_S = 5.0       # how long ``close`` waits for the watch's thread (a check takes microseconds)
STACK_CHARS = 8000      # the innermost part of a deeper stack is kept


# An open call, as ``enter`` stores it: a tuple, made once per lease call on the slot's path.
THREAD, ATTEMPT, F, KEY, INVOKED, ENTERED, TASK = range(7)
_ident, _clock = threading.get_ident, time.monotonic_ns


class HungWatch:
    """``history``: the worker's writer; ``bound_s``: the call bound; ``stops``: code objects
    (``stops_of``) of the frames just outside a lease call — the claim loop's call wrapper
    ``Slot._call`` — where a call's own stack begins."""

    def __init__(self, history, bound_s: float, stops: tuple = ()) -> None:
        self.history, self.bound_ns, self.stops = history, int(bound_s * 1e9), stops
        self.bound_s = bound_s
        self.period_s = min(PERIOD_S, max(MIN_PERIOD_S, bound_s / 10))
        # process -> its open call: (thread ident, attempt, f, key, invoked history ns, entered
        # CLOCK_MONOTONIC ns, the asyncio task or None)
        self._open: dict[str, tuple] = {}
        self._reported: dict[str, tuple] = {}    # process -> the call of it reported last
        # process -> (its slot-board record, its ``current``) (``follow``), and the number of the
        # call of it reported last
        self._followed: dict[str, tuple] = {}
        self._reported_number: dict[str, int] = {}
        self._freezes: list[tuple[int, int]] = []   # (seen at ns, overrun ns) of each freeze
        self._done = threading.Event()
        self._loop_thread = threading.Thread(target=self._loop, name="hung-watch", daemon=True)

    def start(self) -> "HungWatch":
        self._loop_thread.start()
        return self

    def close(self) -> None:
        """Stop the watch and wait for its thread: it wakes at once, so that nothing it reads (a
        slot board's record) is closed under it."""
        self._done.set()
        thread = self._loop_thread
        if thread.is_alive() and thread is not threading.current_thread():
            thread.join(CLOSE_WAIT_S)

    # -- the slots' side -----------------------------------------------------------------------
    def follow(self, process: str, record, current) -> None:
        """Watch ``process``'s calls on its slot-board record (``SlotRecord.call()``: the code,
        number and entry time of the call it is inside); ``current()`` gives (its thread's ident,
        (f, attempt, key, invoked) of its latest call), the call it is inside while it is inside one."""
        self._followed[process] = (record, current)

    def enter(self, process: str, attempt: str, f: str, key: str, invoked: int, task=None) -> None:
        self._open[process] = (_ident(), attempt, f, key, invoked, _clock(), task)

    def leave(self, process: str) -> None:
        self._open.pop(process, None)

    # -- what the worker asks at the end ------------------------------------------------------
    def hung(self, process: str) -> bool:
        """Whether ``process`` is inside a call already reported hung (the worker may leave it)."""
        followed = self._followed.get(process)
        if followed is not None:
            code, number, _ = followed[0].call()
            return code != 0 and self._reported_number.get(process) == number
        call = self._open.get(process)
        return call is not None and self._reported.get(process) is call

    # -- the watch -----------------------------------------------------------------------------
    def _loop(self) -> None:
        last = time.monotonic_ns()
        period = int(self.period_s * 1e9)
        while not self._done.wait(self.period_s):
            now = time.monotonic_ns()
            overrun = now - last - period
            if overrun > FROZEN_SLACK_S * 1e9:
                self.stopped(overrun, now)
            last = now
            self.check(now)

    def stopped(self, ns: int, seen: int) -> None:
        """The process was stopped for ``ns`` (the watch's sleep overran), seen at ``seen``: taken
        off the running time of every call entered before then."""
        self._freezes.append((seen, ns))

    def _running(self, now: int, entered: int) -> int:
        """How long a call entered at ``entered`` has run by ``now``, less the freezes seen since."""
        return now - entered - sum(ns for seen, ns in self._freezes if seen > entered)

    def check(self, now: int) -> None:
        """Report every open call that has run longer than the bound and was not reported yet."""
        for process, (record, current) in list(self._followed.items()):
            code, number, entered = record.call()
            if code == 0 or self._reported_number.get(process) == number:
                continue
            running = self._running(now, entered)
            if running < self.bound_ns:
                continue
            thread, last = current()
            if last is None or record.call()[:2] != (code, number):   # it left the call meanwhile
                continue
            self._reported_number[process] = number
            self._report(process, last, running, self.stack(thread))
        for process, call in list(self._open.items()):
            running = self._running(now, call[ENTERED])
            if running < self.bound_ns or self._reported.get(process) is call:
                continue
            self._reported[process] = call
            self._report(process, (call[F], call[ATTEMPT], call[KEY], call[INVOKED]), running,
                         self.stack(call[THREAD], call[TASK]))

    def _report(self, process: str, call: tuple, running: int, stack: str) -> None:
        """``call_hung`` of ``process``'s call (f, attempt, key, invoked), running for ``running`` ns."""
        f, attempt, key, invoked = call
        self.history.record(process, CALL_HUNG, f=f, attempt=attempt, key=key, invoked=invoked,
                            running_s=round(running / 1e9, 3), bound_s=self.bound_s, stack=stack)

    def stack(self, thread: int, task=None) -> str:
        """The stack of ``thread`` (or of ``task``, a coroutine's chain of awaits) from the lease's
        frame inward, most recent call last (all of it when the wrapper is not on it)."""
        frame = sys._current_frames().get(thread)
        frames, on_thread = [], []
        while frame is not None:
            on_thread.append(frame)
            frame = frame.f_back
        for frame in on_thread:
            if any(frame.f_code is code for code in self.stops):   # the very code object
                break
            frames.append(frame)
        if task is not None:
            awaits = _awaits(task)
            if not any(a is f for a in awaits[-1:] for f in on_thread):  # suspended: its awaits are its stack
                cut = [i for i, fr in enumerate(awaits) if any(fr.f_code is code for code in self.stops)]
                frames = list(reversed(awaits[cut[-1] + 1:] if cut else awaits))
        text = "".join(traceback.StackSummary.extract((fr, fr.f_lineno) for fr in reversed(frames)).format())
        return text[-STACK_CHARS:] if text else "(no stack: the thread had ended)"


def stops_of(*functions) -> tuple:
    """The code objects of those of ``functions`` that have one, for ``HungWatch``'s ``stops``. A
    function of a compiled module (setup.py) has none, and no frame on a Python stack either: so
    the worker names both the claim loop's call wrapper and ``_run_slot``, the interpreted function
    that runs the loop — the first met outward from the lease's frame is where its stack begins."""
    return tuple(code for fn in functions if (code := getattr(fn, "__code__", None)) is not None)


def _awaits(task) -> list:
    """The frames of a task's coroutine and of each coroutine it awaits, outermost first."""
    frames = []
    coro = task.get_coro() if hasattr(task, "get_coro") else None
    while coro is not None:
        frame = getattr(coro, "cr_frame", None) or getattr(coro, "gi_frame", None)
        if frame is None:
            break
        frames.append(frame)
        coro = getattr(coro, "cr_await", None) or getattr(coro, "gi_yieldfrom", None)
    return frames
