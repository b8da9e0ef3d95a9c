"""One claim loop ("slot"): pick a job key, build a fresh lease, acquire, run the job, release.

Every lease call is recorded as an invocation and a completion (see ``docs/history.md``):
``ok``/``fail`` when it returned, ``info`` when it raised (outcome unknown); a call that does not
return within the run's call bound is reported ``call_hung`` by the worker's watch. While a job runs,
a lease with ``renew()`` is renewed every TTL/3; a renewal that returns False or raises stops
the job before it writes its effect. The job's key is drawn from a generator
seeded by (seed, worker, slot), so the same seed gives the same draws: the k-th attempt's key,
however many acquires failed in between. So is a job's duration, except which part of a mixture
(``90%:0.4s,10%:1.6s``) it takes: that is the run's, by the job's number across every slot
(``durations.JobDraws``), so that every block of the run's jobs has each part's exact share.
"""
from __future__ import annotations

import random
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Final

from leasecheck._mypyc import mypyc_attr
from leasecheck.harness.record.connection import SendTracker
from leasecheck.harness.record.numbering import Call
from leasecheck.harness.record.history import CallLines, calls_of
from leasecheck.harness.run.slot_board import SlotRecord, code, outcome
from leasecheck.workloads.stall import TICK_S, Stall
from leasecheck.events import (
    ACQUIRE, EFFECT, FAIL, F_EFFECT, INFO, INVOKE, JOB_END, JOB_START, LATE_SENT, LEASE_ERROR, OK)


@mypyc_attr(allow_interpreted_subclasses=True)   # the asynchronous loop's AsyncSlot
@dataclass
class Slot:
    process: str                 # "w3.s1"
    history: Any                 # a HistoryWriter, or (a test's) anything with its record() and now()
    tracker: SendTracker
    client: Any                  # what the lease is built with: a redis-py client on audited
                                 # connections, or (``connect = "url"``) its slot's URL
    lease_factory: Callable
    keys: list[str]
    ttl_ms: int
    job_duration: Any            # leasecheck.harness.settings.durations.Distribution: job_draws(seed, numbers)
    retry_delay: Any
    seed: int
    deadline_ns: int             # in history time: stop claiming after this
    stop: threading.Event
    # The slot's record on the worker's slot board (leasecheck.harness.run.slot_board): which call
    # it is inside (enter/leave, each return counted as slot_board.outcome says) and whether it holds
    # a claim (hold). The worker's hung-call watch reads which call it is inside from there too
    # (HungWatch.follow, with ``current``).
    record: Any = field(default_factory=SlotRecord.alone)   # compiled: a leasecheck._board.Record
    sink: Any = None             # leasecheck.workloads.sink.Sink, when effects land in the store (--sink)
    # the slot's latest call as its send tracker began it (attempt, f, key, invoked), set as the
    # call is invoked: the call it is inside while the board says it is inside one, else its last
    _last: Call | None = None
    stall: Stall | None = None   # a job frozen by hang:holder
    # the run-wide number of the job about to start (``job_numbers.JobNumbers``), for a mixture of
    # job durations (``durations.JobDraws``); None: the slot numbers its own jobs
    job_numbers: Any = None
    thread: int = field(default=0, init=False)   # the ident of the thread running the slot (set by run)
    # the slot's own events, each line formatted from parts encoded once (``CallLines``)
    _lines: CallLines = field(init=False, repr=False)
    # the record's enter and leave, bound once (a call of either is then not a look-up by name too)
    _enter: Callable = field(init=False, repr=False)
    _leave: Callable = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self._lines = calls_of(self.history, self.process)
        self._enter, self._leave = self.record.enter, self.record.leave

    def run(self) -> None:
        # Separate streams, so timing (how many acquires fail) never shifts the other draws:
        # the k-th attempt's key, the k-th job's duration, the k-th back-off are fixed by the seed.
        self.thread = threading.get_ident()
        keys = random.Random(f"{self.seed}:{self.process}:keys")
        jobs = random.Random(f"{self.seed}:{self.process}:jobs")
        delays = random.Random(f"{self.seed}:{self.process}:delays")
        pick, count, names = keys.randrange, len(self.keys), self.keys
        # keys.randrange(count) without its two interpreted frames: the same draws (_SAME_DRAWS)
        bits, inline = keys.getrandbits, count > 0 and _SAME_DRAWS
        stopped, now, deadline = self.stop.is_set, self.history.now, self.deadline_ns
        # each draw a call of the distribution's bound ``sample`` with its generator (a
        # ``functools.partial`` of the two took about 3,000 instructions a call: bench/RESULTS.md)
        draw_duration, back_off = self.job_duration.job_draws(self.seed, self.job_numbers), self.retry_delay.sample
        prefix = f"{self.process}."
        n = 0
        while not stopped() and now() < deadline:
            key = names[_below(bits, count) if inline else pick(count)]
            attempt = f"{prefix}{n}"
            n += 1
            if self._attempt(attempt, key, draw_duration, jobs):   # a direct call, compiled
                continue
            delay = back_off(delays)
            if delay > 0:   # with no back-off, no wait (an Event.wait(0) still takes locks)
                self.stop.wait(delay)
        self._credit_left()

    def current(self) -> tuple[int, tuple | None]:
        """(the slot's thread, (f, attempt, key, invoked) of its latest call): what the hung-call
        watch reports of a call the slot's record says it is inside."""
        last = self._last
        return self.thread, None if last is None else (last.f, last.attempt, last.key, last.invoked)

    def _credit_left(self) -> None:
        """Commands sent since the slot's last call returned and before its next attempt began
        (a lease library's own thread, a client's late clean-up) belong to the attempt that made
        that call: written as ``late_sent`` of it (docs/history.md, "Commands between calls")."""
        tracker = self.tracker
        if tracker.idle():      # the common case: no command since the last call's completion
            return
        left = tracker.drain()
        last = self._last
        if left and last is not None:
            self.history.record(self.process, LATE_SENT, f=last.f, attempt=last.attempt, key=last.key,
                                invoked=last.invoked, sent=left)

    # -- one attempt -----------------------------------------------------------------------
    def _attempt(self, attempt: str, key: str, draw_duration: Callable[[random.Random], float],
                 jobs: random.Random) -> bool:
        """Returns True when the attempt held the claim (and ran the job, ``draw_duration(jobs)``
        seconds long)."""
        self._credit_left()
        try:
            lease = self.lease_factory(self.client, key, self.ttl_ms)
        except Exception as e:  # the lease's own constructor failed: nothing was claimed
            self.history.record(self.process, LEASE_ERROR, attempt=attempt, key=key,
                                error=_describe(e), sent=self.tracker.drain())
            return False
        got = self._call(lease.acquire, "acquire", attempt, key)
        if got is not True:
            return False
        record = self.record
        record.hold(True)
        try:
            self._job(lease, attempt, key, draw_duration(jobs))
            self._call(lease.release, "release", attempt, key)
        finally:
            record.hold(False)
        return True

    def _job(self, lease, attempt: str, key: str, duration: float) -> None:
        stall = self.stall
        if duration <= 0.0 and self.sink is None and (stall is None or not stall.frozen(self.process)):
            # A job of no duration, its slot not frozen: what the loop below does for it (it ends
            # before any renewal is due), its three lines written in one step (bench/RESULTS.md,
            # "fifteenth session").
            if stall is not None:
                stall.job(self.process, True)
            self._lines.instant_job(attempt, key)
            if stall is not None:
                stall.job(self.process, False)
            return
        renew = renewal(lease)
        renews = callable(renew)
        period = self.ttl_ms / 3000.0
        start = _monotonic()
        end = start + duration
        next_renew = start + period
        lines, process = self._lines, self.process
        lines.job(JOB_START, attempt, key)
        if stall is not None:
            stall.job(process, True)
        aborted = frozen = False
        while True:
            now = _monotonic()
            if stall is not None:    # hang:holder: no progress while frozen
                end, frozen = stall.moved_end(process, now, end)
            if now >= end:
                break
            if renews and now >= next_renew:
                if self._call(renew, "renew", attempt, key) is not True:
                    aborted = True
                    break
                self.record.hold(True)     # a renewal: the board's deadline moved
                next_renew += period
                continue
            wake = min(end, next_renew) if renews else end
            if frozen:
                wake = min(wake, now + TICK_S)
            if stall is not None:
                stall.sleep(process, max(0.0, wake - now))
            else:
                time.sleep(max(0.0, wake - now))
        if stall is not None:
            stall.job(process, False)
        if not aborted:
            self._effect(lease, attempt, key)
        lines.job_end(attempt, key, aborted)

    def _effect(self, lease, attempt: str, key: str) -> None:
        """Record the job's effect; with ``--sink`` it is a store write, recorded like a call
        (``f = "effect"``) so the audit can attribute it."""
        if self.sink is None:
            self._lines.job(EFFECT, attempt, key)
            return
        fence = getattr(lease, "fence", None)
        self.history.record(self.process, INVOKE, f=F_EFFECT, attempt=attempt, key=key, fence=fence)
        try:
            accepted = self.sink.write(key, fence)
        except Exception as e:
            self.history.record(self.process, INFO, f=F_EFFECT, attempt=attempt, key=key,
                                fence=fence, error=_describe(e), sent=self.tracker.drain())
            return
        self.history.record(self.process, OK, f=F_EFFECT, attempt=attempt, key=key, fence=fence,
                            value=accepted, sent=self.tracker.drain())
        self.history.record(self.process, EFFECT, attempt=attempt, key=key, fence=fence,
                            fenced_accepted=accepted)

    def _call(self, fn, f: str, attempt: str, key: str):
        """Run one lease call between an invocation and a completion; None when it raised."""
        lines, tracker, leave = self._lines, self.tracker, self._leave
        invoked = lines.invoke(f, attempt, key)
        self._last = tracker.begin(attempt, f, key, invoked)     # closed by the drain of its completion
        self._enter(code(f))
        try:
            value = bool(fn())
        except Exception as e:
            leave(outcome(f, None))
            self.history.record(self.process, INFO, f=f, attempt=attempt, key=key, error=_describe(e),
                                sent=tracker.drain())
            return None
        leave(outcome(f, value))
        lines.done(FAIL if (f == ACQUIRE and not value) else OK, f, attempt, key, value, tracker.drain())
        return value


_monotonic: Final = time.monotonic

# lease class -> whether ``getattr(lease, "renew")`` may find something: the class or a base defines
# ``renew``, ``__getattr__`` or ``__getattribute__``
_MAY_RENEW: Final[dict] = {}
_DYNAMIC: Final = ("renew", "__getattr__", "__getattribute__")


def renewal(lease: object) -> Any:
    """``getattr(lease, "renew", None)``, without raising and catching an ``AttributeError`` on every
    attempt of a lease that has no ``renew`` (most leases; the error's message is formatted each
    time): the lease's class is looked at once, and an instance's own ``renew`` still counts."""
    cls = type(lease)
    may = _MAY_RENEW.get(cls)
    if may is None:
        may = _MAY_RENEW[cls] = any(name in vars(k) for k in cls.__mro__ if k is not object for name in _DYNAMIC)
    if may:
        return getattr(lease, "renew", None)
    own = getattr(lease, "__dict__", None)
    return own.get("renew") if type(own) is dict else None


def _below(bits: Callable[[int], int], n: int) -> int:
    """A draw in ``range(n)`` (``n`` > 0) from ``bits`` (a ``Random``'s ``getrandbits``) as
    CPython's ``Random.randrange(n)`` makes it: the fewest bits that hold ``n``, drawn again
    until below it."""
    width = n.bit_length()
    r = bits(width)
    while r >= n:
        r = bits(width)
    return r


def _same_draws() -> bool:
    """Whether ``_below`` gives this Python's ``randrange`` draws (checked once at import: where it
    does not, the claim loop calls ``randrange``, so a seed picks the same keys either way)."""
    ours, theirs = random.Random(7), random.Random(7)
    return all(_below(ours.getrandbits, n) == theirs.randrange(n)
               for n in (1, 2, 3, 5, 7, 64, 100, 1000, 4097) for _ in range(25))


_SAME_DRAWS = _same_draws()


def _describe(e: BaseException) -> str:
    return f"{type(e).__name__}: {e}"[:300]
