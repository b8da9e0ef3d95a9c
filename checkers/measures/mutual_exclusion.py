"""Mutual exclusion across several masters (``--topology redlock``), from the history alone.

A Redlock acquire that returns True promises its caller the lock until the validity time runs
out: ttl − drift after the acquire began (the lease measures ``elapsed`` from its own start,
which is no earlier than the invocation, so the history's invocation gives the shortest promise
the lease may have made). The holder gives the lock up when it invokes its release. So an
attempt *holds* the lock on its key over

    [acquire completion, min(acquire invocation + ttl − drift, release invocation)]

with drift = 1% of the ttl + 2 ms (the published algorithm's allowance for clock rates).
Two attempts on the same key whose holds overlap both held the lock at once: a mutual-exclusion
violation. With correct clocks that cannot happen — a second majority shares a master with the
first, where the first's key lives at least ttl after its invocation unless released — so an
overlap proves that some master let a key go early (a clock jump) or a lease that is wrong.

For example, ttl 1000 ms (drift 12 ms): A invokes acquire at 1.000 s, wins at 1.003 s and never
releases before 1.988 s, so A holds [1.003, 1.988]; B wins at 1.500 s: both held it at 1.500 s.
"""
from __future__ import annotations

from dataclasses import dataclass

from leasecheck.events import ACQUIRE, COMPLETIONS, INVOKE, OK, RELEASE, TYPE

DRIFT_FACTOR = 0.01
DRIFT_MS = 2.0


def drift_ns(ttl_ms: float) -> int:
    return round((DRIFT_FACTOR * ttl_ms + DRIFT_MS) * 1e6)


def promised_end_ns(invoke_ns: int, ttl_ms: float) -> int:
    """The end of the validity an acquire invoked at ``invoke_ns`` may promise."""
    return invoke_ns + round(ttl_ms * 1e6) - drift_ns(ttl_ms)


@dataclass
class Hold:
    """One attempt's hold of the lock, in history ns."""
    attempt: str
    key: str
    invoked: int            # the acquire's invocation
    start: int              # the acquire's completion (it returned True)
    end: int                # the promise's end, or the release's invocation if earlier
    released: bool          # whether a release was invoked before the promise ran out

    def overlaps(self, other: "Hold") -> bool:
        return self.key == other.key and self.start < other.end and other.start < self.end


class Holds:
    """Every won acquire's hold, fed the history's events (dicts) in history order, one at a time:
    what is kept is one `Hold` per attempt that won. `holds` is the same over a whole history."""

    def __init__(self, ttl_ms: float) -> None:
        self.ttl_ms = ttl_ms
        self.invoked: dict[str, int] = {}
        self.out: dict[str, Hold] = {}

    def feed(self, e: dict) -> None:
        f = e.get("f")
        if f != ACQUIRE and f != RELEASE:
            return
        kind, attempt = e.get(TYPE), e.get("attempt")
        if f == ACQUIRE and kind == INVOKE:
            self.invoked[attempt] = e["time"]
        elif f == ACQUIRE and kind in COMPLETIONS:
            t0 = self.invoked.pop(attempt, None)     # the call is over: only calls in flight are kept
            if kind == OK and e.get("value") is True and t0 is not None:
                self.out[attempt] = Hold(attempt, e.get("key"), t0, e["time"], promised_end_ns(t0, self.ttl_ms), False)
        elif f == RELEASE and kind == INVOKE and attempt in self.out:
            h = self.out[attempt]
            if e["time"] < h.end:
                h.end, h.released = e["time"], True

    def result(self) -> list[Hold]:
        return sorted(self.out.values(), key=lambda h: (h.start, h.attempt))


def holds(events, ttl_ms: float) -> list[Hold]:
    """Every won acquire's hold, from the history's events (dicts, in history order)."""
    h = Holds(ttl_ms)
    for e in events:
        h.feed(e)
    return h.result()


def violations(hs: list[Hold]) -> list[tuple[Hold, Hold]]:
    """Pairs (earlier, later) of holds on one key that overlap, by the later one's start."""
    found = []
    by_key: dict[str, list[Hold]] = {}
    for h in hs:
        live = [p for p in by_key.get(h.key, ()) if p.end > h.start]   # the others ended before
        found += [(p, h) for p in live if p.overlaps(h)]
        by_key[h.key] = live + [h]
    return found
