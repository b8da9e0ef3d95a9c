"""Lease calls: pair each `invoke` with its completion (`ok`, `fail` or `info`) by attempt.

An attempt makes one call at a time, so a completion belongs to the attempt's open invocation.
A call that never completed (the run was killed) has `type` None: its outcome and its `sent`
list are unknown. Pairing problems (a completion without an invocation, two open invocations)
are reported, not raised.

An `Op` keeps only what the checkers read — not the events themselves — so a long history costs
a small, fixed amount per call (`Pairer` consumes events one at a time).
"""
from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import Any, Final

from leasecheck.events import CALLS, COMPLETIONS, FAIL, INDEX, INFO, INVOKE, LATE_SENT, OK, TYPE
from leasecheck.checkers.read.records import UNSET as _UNSET

# CALLS: acquire, release, renew, effect (a job's write to the --sink); COMPLETIONS: ok, fail, info
_intern: Final = sys.intern
# (a `Final` of this module: compiled, a C static, where the imported name is a dict look-up per use)
UNSET: Final = _UNSET
# A completion's field, in a node's view of the history only (`nodes.NodeView`, never written to a
# file): how many of its `sent` entries at the end it joined from `late_sent` events.
LATE_ENTRIES: Final = "_late_entries"


@dataclass(slots=True, init=False)
class Op:
    """One lease call: its invocation and, when it completed, what the completion said.

    `Op(index, attempt, f, key, invoke_time, completion_event)` fills the completion fields from
    the event dict (tests build ops that way); the dict itself is not kept."""
    index: int
    attempt: Any                     # a str in any well-formed history
    f: str
    key: Any
    invoke_time: Any
    type: str | None                 # 'ok', 'fail', 'info', or None when it never completed
    value: Any                       # the returned value of an `ok` call
    end_time: Any                    # int, or None when it never completed
    sent: tuple                      # ((conn, seq, name[, reply]), ...) of the completion (always a tuple)
    fence: Any                       # an effect's fencing token (--sink)
    outcome: str | None              # a release that found nothing: what it met (claims.FOUND_NOTHING)
    # how many of `sent`'s last entries a node's view joined from `late_sent` events
    # (`nodes.NodeView`, `LATE_ENTRIES`): sent after the call returned, they set no horizon (`join`)
    late: int

    def __init__(self, index: int, attempt: Any, f: str, key: Any, invoke_time: Any, done: dict | None = None,
                 type: str | None = None, value: Any = None, end_time: Any = None,  # noqa: A002
                 sent: Any = (), fence: Any = None, outcome: str | None = None) -> None:
        # Written out (not generated): the checker builds one per lease call.
        self.index, self.attempt, self.f, self.key, self.invoke_time = index, attempt, f, key, invoke_time
        self.type, self.value, self.end_time, self.sent, self.fence = type, value, end_time, sent, fence
        self.outcome = outcome
        self.late = 0
        if done is not None:
            self.complete(done)

    def complete(self, e: dict) -> None:
        """Take the completion event `e`'s outcome."""
        self.completed_by(e, e[TYPE], e["time"])

    def completed_by(self, e: dict, kind: Any, t: Any) -> None:
        """`complete` of an event whose `type` is `kind` and `time` is `t` (the caller has read them)."""
        self.type = kind
        self.end_time = t
        self.value = e.get("value") if kind == OK else None
        self.fence = e.get("fence")
        late = e.get(LATE_ENTRIES)
        if late:
            self.late = late
        sent = e.get("sent")
        if sent:
            intern = _intern
            if type(sent) is list and len(sent) == 1:     # the common case: one command
                x = sent[0]
                self.sent = (((intern(x[0]), x[1], intern(x[2]))
                              if type(x) is list and len(x) == 3 and type(x[0]) is str and type(x[2]) is str
                              else _entry(x)),)
                return
            self.sent = tuple([(intern(x[0]), x[1], intern(x[2]))
                               if type(x) is list and len(x) == 3 and type(x[0]) is str and type(x[2]) is str
                               else _entry(x) for x in sent])

    @property
    def completed(self) -> bool:
        return self.type is not None

    @property
    def succeeded(self) -> bool | None:
        """True/False when the client knows the outcome (ok true / ok false or fail), else None."""
        if self.type == OK:
            return bool(self.value)
        return False if self.type == FAIL else None


def _entry(x):
    """A `sent` entry as a tuple with interned strings (many calls share a connection); a
    conditional create's reply, when recorded, stays its 4th element."""
    if type(x) is list:
        if len(x) == 3 and type(x[0]) is str and type(x[2]) is str:
            return (_intern(x[0]), x[1], _intern(x[2]))
        if len(x) == 4 and type(x[0]) is str and type(x[2]) is str:
            return (_intern(x[0]), x[1], _intern(x[2]), x[3])
        return tuple(x)
    return x


def slot_of(name: str) -> str:
    """'w3.s1' for an attempt 'w3.s1.17' or a connection 'w3.s1.c2'."""
    return name.rsplit(".", 1)[0]


class InFlight:
    """The calls in flight, by attempt: `calls` holds them, except the latest invocation by an
    attempt that is a str, kept aside in `latest` until the next invocation. Most calls complete
    before their process invokes another, so the commonest call never goes into the dict and out
    again. A call has its `attempt`; `settle()` puts the one aside into `calls` (which then holds
    every call in flight)."""

    def __init__(self) -> None:
        self.calls: dict[Any, Any] = {}
        self.latest: Any = None

    def settle(self) -> None:
        latest = self.latest
        if latest is not None:
            self.latest = None
            self.calls[latest.attempt] = latest

    def put(self, attempt: Any, call: Any) -> None:
        """`call` is `attempt`'s call in flight now (replacing any it had)."""
        self.settle()
        calls = self.calls
        if type(attempt) is str:
            if calls and attempt in calls:    # (an empty dict is not asked: usually none is)
                del calls[attempt]
            self.latest = call
        else:
            calls[attempt] = call

    def take(self, attempt: Any) -> Any:
        """`attempt`'s call in flight, no longer in flight; None when it has none."""
        latest = self.latest
        if latest is not None and type(attempt) is str and latest.attempt == attempt:
            self.latest = None
            return latest
        call = self.calls.get(attempt)     # (get and del, not pop: compiled, C calls)
        if call is not None:
            del self.calls[attempt]
        return call


class Pairer:
    """Feed events in history order. Each call that completes is passed to `on_done(op)`; with
    `keep`, every call is also kept in `ops` (invocation order). `open` holds the calls invoked
    and not (yet) completed but the latest (kept aside until another is invoked; `never_completed()`
    has them all); `problems` grows as events come."""

    def __init__(self, on_done=None, keep: bool = True, on_late=None) -> None:
        self.ops: list[Op] = []
        self.problems: list[str] = []
        self.in_flight = InFlight()     # the calls invoked and not (yet) completed
        self.on_done, self.keep, self.on_late = on_done, keep, on_late
        self.count = 0
        self.abandoned: list[Op] = []   # invoked again before completing: never completed

    def never_completed(self) -> list[Op]:
        """The calls without a completion (so far), in invocation order."""
        self.in_flight.settle()
        return sorted(self.abandoned + list(self.in_flight.calls.values()), key=lambda op: op.index)

    def feed(self, e: dict) -> Op | None:
        """Take the next event; returns the call it completed, if any (after `on_done` got it)."""
        return self.call(e, e.get(TYPE), e.get("f"))

    def call(self, e: dict, kind: Any, f: Any) -> Op | None:
        """`feed` of an event whose `type` is `kind` and `f` is `f` (the digest has read them)."""
        if f not in CALLS:
            return None
        return self.known_call(e, kind, f, e.get("attempt"), e.get("time"))

    def known_call(self, e: dict, kind: Any, f: str, attempt: Any, t: Any) -> Op | None:
        """`call` of an event whose `f` is one of `CALLS`, its `attempt` and `time` read (`t`
        is only read for an invocation, whose `time` must be there). The caller that needs
        each completed call can take the returned one (compiled: no Python call of `on_done`)."""
        if kind == INVOKE:
            if t is None:
                t = e["time"]       # (a KeyError, as ever, for an invocation without a time)
            self._invoked(e.get(INDEX), f, attempt, e.get("key"), t)
            return None
        if kind == LATE_SENT:
            if self.on_late is not None:
                self.on_late(self._late(e))
            return None
        if kind not in COMPLETIONS:
            return None
        op = self._completing(e.get(INDEX), kind, f, attempt)
        if op is None:
            return None
        op.completed_by(e, kind, e["time"] if t is None else t)
        if self.on_done is not None:
            self.on_done(op)
        return op

    def record_call(self, kind: str, f: str, attempt: Any, t: Any, key: Any, index: Any, value: Any, sent: Any,
                    fence: Any) -> Op | None:
        """`known_call` of a record's tuple (`records.ROW`: an invocation or an ``ok``/``fail``),
        its fields read by the caller (`attempt` and `key` None where the line has none, the
        others `UNSET`; `t` an int). (A record's `f` is one of the constants of
        `leasecheck.events` already: not interned again.)"""
        if kind == INVOKE:
            self._invoked(index, f, attempt, key, t, False)
            return None
        op = self._completing(index, kind, f, attempt)
        if op is None:
            return None
        op.type, op.end_time = kind, t
        if kind == OK:
            op.value = None if value is UNSET else value
        else:
            op.value = None
        op.fence = None if fence is UNSET else fence
        if sent:     # (entries made tuples by the decoder, as `completed_by` makes them)
            op.sent = tuple(sent)
        if self.on_done is not None:
            self.on_done(op)
        return op

    def _invoked(self, index: Any, f: str, attempt: Any, key: Any, t: Any, intern_f: bool = True) -> None:
        """An invocation (`index`: its event's, for a problem's message)."""
        in_flight = self.in_flight
        in_flight.settle()
        open_ = in_flight.calls
        # (an empty dict is not asked: most of the time no call is open; any attempt that is no
        # str is looked up all the same, as hashing it may raise)
        if (open_ or type(attempt) is not str) and attempt in open_:
            self.problems.append(f"history #{index}: {attempt} invoked {f} while its "
                                 f"{open_[attempt].f} was still open")
            self.abandoned.append(open_[attempt])
        new = Op(self.count, attempt, _intern(f) if intern_f else f, _intern(key) if type(key) is str else key, t)
        self.count += 1
        if self.keep:
            self.ops.append(new)
        in_flight.put(attempt, new)     # (replacing the abandoned one)

    def _completing(self, index: Any, kind: Any, f: str, attempt: Any) -> Op | None:
        """The open call a completion of `f` by `attempt` completes, taken out of `open`; None
        (and a problem, naming the completion's event by its `index`) when there is none."""
        op: Op | None = self.in_flight.take(attempt)
        if op is None or op.f != f:
            self.problems.append(f"history #{index}: {kind} of {f} by {attempt} "
                                 "has no matching invoke (ignored)")
            if op is not None:
                self.in_flight.calls[attempt] = op
            return None
        return op

    def _late(self, e: dict) -> Op:
        """A ``late_sent`` event as a call of its own: the commands the call named by attempt,
        ``f`` and ``invoked`` sent after it returned, or that its attempt's own threads sent
        after its last call (docs/history.md, "Commands between calls"). Outcome unknown
        (``info``), counted as no call; only the join and the claims see it."""
        key = e.get("key")
        # (`feed` saw that `f` is a call's name)
        op = Op(self.count, e.get("attempt"), _intern(e["f"]), _intern(key) if type(key) is str else key,
                e.get("invoked") if isinstance(e.get("invoked"), int) else e["time"])
        self.count += 1
        op.complete({TYPE: INFO, "time": e["time"], "sent": e.get("sent") or []})
        return op


def pair_ops(events) -> tuple[list[Op], list[str]]:
    """Return `(ops, problems)`; ops in invocation order."""
    p = Pairer()
    for e in events:
        p.feed(e)
    return p.ops, p.problems
