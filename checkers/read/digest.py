"""One pass over the history: everything the checkers need from it, and nothing more.

`Digest.feed(event)` takes events in history order and keeps only compact results — counts
and outcomes of the lease calls, the job runs, the faults, the effects recorded without a sink,
the run's start and end — so a history of any length is read once and never held in memory.
"""
from __future__ import annotations

from typing import Any, Final

from leasecheck.protocol import HISTORY_SCHEMA_VERSION as SCHEMA_VERSION

from leasecheck.checkers.measures.attempt_ends import AttemptEnds
from leasecheck.checkers.measures.early_loss import Promises
from leasecheck.checkers.measures.exceptions import Exceptions
from leasecheck.checkers.errors import CheckError, HistoryError
from leasecheck.checkers.read.faults import FaultTracker
from leasecheck.checkers.measures.history_only import ForeignProof
from leasecheck.checkers.measures.hazards import TYPES as HAZARD_TYPES, Hazards
from leasecheck.checkers.measures.hung_calls import HungCalls
from leasecheck.checkers.measures.interruption import RunSpan
from leasecheck.checkers.read.jobs import JobTracker
from leasecheck.checkers.model.join import Joiner
from leasecheck.checkers.read.ops import Op, Pairer
from leasecheck.checkers.read.records import UNSET as _UNSET
from leasecheck.checkers.measures.releases import Releases
from leasecheck.checkers.measures import timeline as _timeline
from leasecheck.events import (
    ACQUIRE, CALL_HUNG, EFFECT, FAIL, INFO, INVOKE, FAULT_END, FAULT_NOT_FIRED, FAULT_START, F_EFFECT, JOB_END,
    JOB_START, LEASE_ERROR, OK, RELEASE, RENEW,
    RUN_END, RUN_START, SLOT_CRASH, TYPE, WORKER_END, WORKER_KILLED, WORKER_START)

PROGRESS_EVERY = 1 << 16   # records read between two progress callbacks
# (a `Final` of this module: compiled, a C static, where the imported name is a dict look-up per use)
UNSET: Final = _UNSET
_SPAN: Final = frozenset((RUN_START, RUN_END, WORKER_START, WORKER_END, SLOT_CRASH))


class Digest:
    """The calls are not kept: each completed one goes to `on_done`, which keeps what it needs;
    each `late_sent` event, as a call of its own whose outcome is unknown, to `on_late` (the join)."""

    def __init__(self, on_done=None, on_late=None, joiner: Joiner | None = None) -> None:
        self.pairer = Pairer(None, keep=False, on_late=on_late)   # (each call it completes goes to `_done`)
        self.on_done = on_done
        self.joiner = joiner               # gets each completed call after `on_done` (a C call where compiled)
        self.releases = Releases()
        self.completed = 0                 # completed lease calls (sink writes aside)
        self.effect_ops: list[Op] = []     # the sink writes (--sink), completed
        self.proof = ForeignProof(None)    # releases proven foreign from the history alone
        self.jobs = JobTracker()
        self.promises = Promises()         # when each holder's lease runs out (early loss)
        self.faults = FaultTracker()
        self.span = RunSpan()              # run and worker starts and ends: was the run cut short?
        self.effects: list[tuple] = []    # history-only `effect` events: (attempt, time)
        self.hung = HungCalls()            # calls a worker reported hung (`call_hung`)
        self.exceptions = Exceptions()     # what the lease raised, by type
        self.attempt_ends = AttemptEnds()  # when each attempt that may hold a claim ended
        self.hazards = Hazards()           # the dangerous moments the run reached
        # the run over time, for the HTML report: only when the check's caller draws it
        self.timeline = _timeline.Timeline() if _timeline.wanted() else None
        self._call_event: dict | None = None   # the call event being fed (its error, for the timeline)
        self.count = 0
        self.start: Any = None             # history ns of the first event (None before it)
        self.end: Any = None
        self.config: dict | None = None  # from the first run_start

    def feed(self, event: Any) -> None:
        """Take the next event: a dict, or a record's tuple (`records.ROW`)."""
        if type(event) is tuple:
            self._record(event)
            return
        e: dict = event
        t = e["time"]
        self._at(t)
        kind = e.get(TYPE)
        # (`type(kind) is str` first: compiled, the comparisons after it are C string compares)
        if type(kind) is str and (kind == INVOKE or kind == OK or kind == FAIL or kind == INFO) and "f" in e:
            # A lease call's event, the common case: read once, handed to the three that read it.
            f = e["f"]
            if type(f) is str:
                # (typed: compiled, the comparisons are C ones; each field read once, for all three)
                attempt = e.get("attempt")
                if f == ACQUIRE or f == RELEASE or f == RENEW:
                    self.hazards.call_by(e, kind, f, t, attempt)
                    self._call_event = e
                    done = self.pairer.known_call(e, kind, f, attempt, t)
                else:
                    self._call_event = e
                    done = self.pairer.known_call(e, kind, f, attempt, t) if f == F_EFFECT else None
            else:
                self._call_event = e
                done = self.pairer.call(e, kind, f)
            if done is not None:
                self._done(done)
            if kind == OK or kind == FAIL:   # Exceptions.feed's common case, inline
                self.exceptions.calls += 1
            elif kind == INFO:               # (an invocation is none of its business)
                self.exceptions.feed(e)
            return
        if kind in HAZARD_TYPES:           # (each measure is handed the types it reads)
            self.hazards.see(e, kind, t)
        if kind == CALL_HUNG:    # names its call (`f`), but is no part of its invoke/completion pair
            self.hung.feed(e)
            return
        if "f" in e:
            self._call_event = e
            done = self.pairer.feed(e)
            if done is not None:
                self._done(done)
            if kind == OK or kind == FAIL:   # Exceptions.feed's common case, inline: a call that completed
                self.exceptions.calls += 1
            else:
                self.exceptions.feed(e)
            return
        if kind in (JOB_START, JOB_END, WORKER_KILLED):
            self.jobs.feed(e)
            if kind != WORKER_KILLED and self.timeline is not None:
                self.timeline.job(kind, t, e.get("attempt"), e.get("process", "?"), e.get("key"))
        elif kind == EFFECT:
            self.effects.append((e.get("attempt"), t))
        elif kind in (FAULT_START, FAULT_END, FAULT_NOT_FIRED):
            self.faults.feed(e)
        elif kind in _SPAN:
            self.span.feed(e)
        elif kind == LEASE_ERROR:
            self.exceptions.feed(e)
        if kind == RUN_START and self.config is None:
            version = e.get("schema_version")
            if isinstance(version, int) and not isinstance(version, bool) and version > SCHEMA_VERSION:
                raise CheckError(f"this run was recorded with history schema {version}, newer than "
                                 f"this checker knows ({SCHEMA_VERSION}); check it with a newer leasecheck")
            self.config = e.get("config") if isinstance(e.get("config"), dict) else {}
            self.proof = ForeignProof(self.ttl_ms)
            if self.timeline is not None:
                self.timeline.configure(self.config)

    def _at(self, t: Any) -> None:
        """The next event is at history time `t`: the span so far, and the count."""
        if self.count == 0:
            self.start = self.end = t
            self.hazards.begin(t)
        elif t > self.end:
            self.end = t
        self.count += 1

    def _record(self, e: tuple) -> None:
        """`feed` of a record's tuple (`records.ROW`): what `feed` does with the same event as a
        dict, its fields read from their places (`UNSET` where the line has none, which a dict's
        `get` reads as None)."""
        kind, time, index, process, attempt, key, f, value, sent, fence, aborted = e
        t: int = time   # (the int object itself is handed on: compiled, `t` boxed again would be a new one)
        self._at(time)
        if attempt is UNSET:
            attempt = None
        if key is UNSET:
            key = None
        if kind == INVOKE or kind == OK or kind == FAIL:
            if f != F_EFFECT:     # acquire, release or renew (a record names one of the four calls)
                self.hazards.record_call(e, kind, f, t, attempt, key, value)
            self._call_event = None
            done = self.pairer.record_call(kind, f, attempt, time, key, index, value, sent, fence)
            if done is not None:
                self._done(done)
            if kind != INVOKE:
                self.exceptions.calls += 1
            return
        if kind == EFFECT:
            self.effects.append((attempt, t))
            return
        if kind == JOB_END:
            self.hazards.job_end(attempt, t)
            self.jobs.end(index, attempt, t, False if aborted is UNSET else bool(aborted))
        else:
            self.jobs.start(index, attempt, key, t)
        if self.timeline is not None:
            self.timeline.job(kind, t, attempt, "?" if process is UNSET else process, key)

    def _done(self, op: Op) -> None:
        if op.f == F_EFFECT:
            self.effect_ops.append(op)
        else:
            self.completed += 1
            if op.f == RELEASE:
                self.releases.add(op)
        if op.value is True:           # (the two look only at calls that returned True)
            self.proof.feed(op)
            if op.f == RENEW:
                self.promises.feed(op)
        if self.hung.count:
            self.hung.returned(op)
        self.attempt_ends.feed(op)
        if self.timeline is not None:
            self.timeline.call(op, (self._call_event or {}).get("error") if op.type == INFO else None)
        if self.on_done is not None:
            self.on_done(op)
        if self.joiner is not None:
            self.joiner.add(op)

    def consume(self, events, progress=None) -> "Digest":
        """Feed every event of `events`; `progress()` is called every PROGRESS_EVERY events."""
        every = PROGRESS_EVERY
        for e in events:
            self.feed(e)
            if progress is not None and not self.count % every:
                progress()
        if not self.count:
            raise HistoryError("the history is empty: nothing to check")
        return self

    @property
    def problems(self) -> list[str]:
        return self.pairer.problems + self.jobs.problems

    @property
    def ttl_ms(self) -> float | None:
        """The lease's TTL from the run_start event's config (None when absent)."""
        return (self.config or {}).get("ttl_ms")
