"""Hazard coverage: the dangerous moments a run actually reached, counted from the history in the
checker's one pass (`Digest.feed` hands every event here).

A VALID says the lease survived what the run did; this says what the run did. A run in which no
release was in flight when its claim expired cannot have tested a check-then-act release, one in
which no holder outlived its deadline cannot have tested a release by key name.

Every rule is on the history's clock (docs/history.md, Hazard coverage). An attempt's *deadline*
is the invocation of its last call that returned true among ``acquire`` and ``renew``, plus the
TTL (the earliest the store may expire it; what `early_loss` calls the promise). It holds its
claim from that acquire's completion until its release is invoked.

- ``holder_past_deadline``: a job run that ended (``job_end``) after its attempt's deadline — the
  holder was paused or slow past it. Once per attempt.
- ``release_at_expiry``: a release whose call, from invocation to completion, spans its attempt's
  deadline: the claim could expire, and be re-taken, while the release was in flight. (Another
  attempt's win completing during the release is no sign by itself: it also follows the
  release's own delete, before the releaser reads the reply.)
- ``renew_at_expiry``: a renewal whose call, widened by ``EDGE_NS`` on each side, spans its
  attempt's deadline.
- ``acquire_at_expiry``: an acquire whose call, widened by ``EDGE_NS`` on each side, spans the
  deadline of another attempt's claim on the same key that had not been released.
- ``clock_jump_while_held``: a ``clock`` fault that began while some attempt held a claim before
  its deadline.
- ``failover_unreplicated``: a claim lost in a failover (``lost_in_failover``: the promoted replica
  never had it) — set by the property from the failover measure, replicated runs only.
- ``holder_killed``: a slot that died (``slot_crash``) while one of its attempts held a claim.

Memory: one entry per attempt holding or releasing, and the latest winner of each key.
"""
from __future__ import annotations

from typing import Any, Final

from leasecheck.checkers.read.ops import InFlight
from leasecheck.checkers.read.records import PROCESS, UNSET
from leasecheck.events import (ACQUIRE, COMPLETIONS, FAIL, FAULT_START, INFO, INVOKE, JOB_END, OK, RELEASE, RENEW,
                               RUN_START, SLOT_CRASH, TYPE)

NAMES: Final = ("holder_past_deadline", "release_at_expiry", "renew_at_expiry", "acquire_at_expiry",
         "clock_jump_while_held", "failover_unreplicated", "holder_killed")
# The event types that can reach a hazard: the others are no business of this measure.
TYPES: Final = frozenset((RUN_START, INVOKE, *COMPLETIONS, JOB_END, FAULT_START, SLOT_CRASH))
EDGE_NS: Final = 1_000_000        # "within a millisecond of an expiry"
# What each hazard exercises, said when a VALID run reached none of it (the lease makes that call).
MISSED: Final = {
    "holder_past_deadline": ("no holder outlived its deadline", "a release by key name was not exercised"),
    "release_at_expiry": ("no release was in flight at an expiry", "a check-then-act release was not exercised"),
    "renew_at_expiry": ("no renewal raced its claim's expiry", "a renewal's compare-and-extend was not exercised"),
}


def _process(e: Any) -> Any:
    """An event's ``process`` ("" when it has none): a dict's or a record's tuple (`records.ROW`)."""
    if type(e) is dict:
        return e.get("process", "")
    p = e[PROCESS]
    return "" if p is UNSET else p


class _Held:
    """An attempt holding (or releasing) a claim: its key, its deadline (history ns), its
    process, when its release was invoked, and whether it was counted past its deadline."""
    __slots__ = ("key", "deadline", "process", "released", "past")
    key: Any
    deadline: int             # (history times are integers: compiled, the arithmetic is native)
    process: Any
    released: Any
    past: bool

    def __init__(self, key: Any, deadline: int, process: Any, released: Any = None, past: bool = False) -> None:
        self.key, self.deadline, self.process, self.released, self.past = key, deadline, process, released, past


class _Open:
    """A call invoked and not yet completed: its name, invocation time, its attempt's
    deadline then, and its attempt."""
    __slots__ = ("f", "invoked", "deadline", "attempt")
    f: Any
    invoked: int
    deadline: int | None
    attempt: Any

    def __init__(self, f: Any, invoked: int, deadline: int | None, attempt: Any = None) -> None:
        self.f, self.invoked, self.deadline, self.attempt = f, invoked, deadline, attempt


class Hazards:
    """Feed it the history (`feed`, or `begin` then `see` for the `TYPES`); `counts`, `calls`
    (invocations by call) and `first` ({hazard: {who, time_s}} of its first) grow as it goes."""

    def __init__(self) -> None:
        self.counts: dict[str, int] = {n: 0 for n in NAMES}
        # invocations by call (`calls`): native counters, compiled (a dict's would be boxed ints)
        self._acquires = self._releases = self._renews = 0
        self.first: dict[str, dict] = {}           # hazard -> {who, time_s} of its first
        self.ttl_ns: int | None = None
        self._held: dict[Any, _Held] = {}           # attempt -> _Held
        self._in_flight = InFlight()                # attempt -> its call in flight (an _Open)
        self._last: dict[Any, Any] = {}             # key -> attempt whose claim is the latest won
        self._start: Any = None

    @property
    def calls(self) -> dict[str, int]:
        """Invocations by call: {acquire: n, release: n, renew: n}."""
        return {ACQUIRE: self._acquires, RELEASE: self._releases, RENEW: self._renews}

    def feed(self, e: dict) -> None:
        """Take the next event of the history (any type)."""
        kind, t = e.get(TYPE), e["time"]
        if self._start is None:
            self._start = t
        if kind in TYPES:
            self.see(e, kind, t)

    def begin(self, t: Any) -> None:
        """The history's first event is at `t` (what `first` counts from)."""
        if self._start is None:
            self._start = t

    def see(self, e: dict, kind: Any, t: Any) -> None:
        """Take an event of one of the `TYPES` (after `begin`): the digest hands this measure
        only those."""
        if kind == INVOKE or kind == OK or kind == FAIL or kind == INFO:
            f = e.get("f")
            if f == ACQUIRE or f == RELEASE or f == RENEW:
                self.call(e, kind, f, t)
            return
        if kind == RUN_START:
            if self.ttl_ns is None:
                ttl = (e.get("config") or {}).get("ttl_ms")
                self.ttl_ns = round(ttl * 1e6) if isinstance(ttl, (int, float)) else None
        elif kind == JOB_END:
            self.job_end(e.get("attempt"), t)
        elif kind == FAULT_START and e.get("fault") == "clock":
            if any(h.released is None and h.deadline > t for h in self._held.values()):
                self._hit("clock_jump_while_held", None, t)
        elif kind == SLOT_CRASH:
            slot = e.get("process")
            if any(a.startswith(f"{slot}.") and h.released is None and h.deadline > t for a, h in self._held.items()):
                self._hit("holder_killed", slot, t)

    def call(self, e: dict, kind: Any, f: str, t: Any) -> None:
        """`see` of a lease call's event (`kind` invoke or a completion) whose `f` is ``acquire``,
        ``release`` or ``renew`` (the digest has read both)."""
        self.call_by(e, kind, f, t, e.get("attempt"))

    def call_by(self, e: dict, kind: Any, f: str, t: int, attempt: Any) -> None:
        """`call` of an event whose `attempt` the caller has read too (`t`, its time, is an
        integer, as the history reader makes sure)."""
        if kind == INVOKE:
            self._invoked(f, t, attempt)
        else:
            self._completed(e, kind, f, t, attempt, e.get("key"), e.get("value") is True)

    def record_call(self, e: tuple, kind: str, f: str, t: int, attempt: Any, key: Any, value: Any) -> None:
        """`call_by` of a record's tuple (`records.ROW`) whose `attempt`, `key` and `value` the
        caller has read."""
        if kind == INVOKE:
            self._invoked(f, t, attempt)
        else:
            self._completed(e, kind, f, t, attempt, key, kind == OK and value is True)

    def _invoked(self, f: str, t: int, attempt: Any) -> None:
        held = self._held.get(attempt)
        if f == ACQUIRE:       # (`f` is one of the three: `call_by`, `record_call`)
            self._acquires += 1
        elif f == RELEASE:
            self._releases += 1
        elif f == RENEW:
            self._renews += 1
        else:
            raise KeyError(f)      # (as the dict of counts did)
        self._in_flight.put(attempt, _Open(f, t, held.deadline if held is not None else None, attempt))
        if f == RELEASE and held is not None:
            held.released = t

    def _completed(self, e: Any, kind: Any, f: str, t: int, attempt: Any, key: Any, true: bool) -> None:
        """A completion; `true`: it returned True (`e` is read only for the process of a win)."""
        call: _Open | None = self._in_flight.take(attempt)
        invoked = t
        deadline: int | None = None
        if call is not None:             # (no tuple of the two: compiled, one is built and taken apart)
            invoked, deadline = call.invoked, call.deadline
        ttl_ns = self.ttl_ns
        if f == ACQUIRE:
            last = self._last.get(key)
            other = self._held.get(last)
            if other is not None and last != attempt and other.released is None \
                    and invoked - EDGE_NS <= other.deadline <= t + EDGE_NS:
                self._hit("acquire_at_expiry", attempt, t)
            if ttl_ns is not None and kind == OK and true:
                self._held[attempt] = _Held(key, invoked + ttl_ns, _process(e))
                self._last[key] = attempt
        elif f == RENEW:
            if deadline is not None and invoked - EDGE_NS <= deadline <= t + EDGE_NS:
                self._hit("renew_at_expiry", attempt, t)
            held = self._held.get(attempt)
            if held is not None and ttl_ns is not None and kind == OK and true:
                held.deadline = invoked + ttl_ns
        else:
            if deadline is not None and invoked <= deadline <= t:
                self._hit("release_at_expiry", attempt, t)
            if attempt in self._held:
                del self._held[attempt]
            if self._last.get(key) == attempt:
                del self._last[key]

    def job_end(self, attempt: Any, t: int) -> None:
        """A job run of `attempt` ended at `t` (`see` of a ``job_end``)."""
        held = self._held.get(attempt)
        if held is not None and not held.past and t > held.deadline:
            held.past = True
            self._hit("holder_past_deadline", attempt, t)

    def _hit(self, name: str, who, t: int) -> None:
        self.counts[name] += 1
        if name not in self.first:
            self.first[name] = {"who": who, "time_s": round((t - (self._start or 0)) / 1e9, 3)}

    def relevant(self) -> list[str]:
        """The hazards a VALID must have reached to have tested what this lease does: a release
        past a deadline and at an expiry when it releases, a renewal race when it renews."""
        out = []
        if self._releases:
            out += ["holder_past_deadline", "release_at_expiry"]
        if self._renews:
            out.append("renew_at_expiry")
        return out

    def to_dict(self, failover_unreplicated: int | None = None) -> dict:
        counts = dict(self.counts)
        if failover_unreplicated is not None:
            counts["failover_unreplicated"] = failover_unreplicated
        relevant = self.relevant()
        return {"counts": counts, "reached": sum(1 for n in NAMES if counts[n]),
                "relevant": relevant, "missed": [n for n in relevant if not counts[n]],
                "first": {n: self.first[n] for n in NAMES if n in self.first}}


def missed_sentence(name: str) -> str:
    """``no release was in flight at an expiry: a check-then-act release was not exercised``."""
    what, so = MISSED[name]
    return f"{what}: {so}"


def verdict_suffix(hazards: dict | None) -> str:
    """What a VALID's verdict line adds: `` — but no release was in flight at an expiry: a
    check-then-act release was not exercised`` (every relevant hazard missed), or ``""``."""
    missed = (hazards or {}).get("missed") or []
    return (" — but " + "; ".join(missed_sentence(n) for n in missed if n in MISSED)) if missed else ""


def hazard_words(hazards: dict) -> str:
    """The summary's and the report's hazards row: each hazard reached and how often, then the
    relevant ones not reached."""
    counts = hazards.get("counts") or {}
    reached = [f"{n.replace('_', ' ')} {c}" for n, c in counts.items() if c]
    missed = [missed_sentence(n) for n in hazards.get("missed") or [] if n in MISSED]
    text = ("reached: " + ", ".join(reached)) if reached else "none reached"
    return text + ("; " + "; ".join(missed) if missed else "")
