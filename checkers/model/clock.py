"""Relate the store's wall clock (audit times, expiries) to the history clock (docs/history.md).

A sample from `store-clock.jsonl` says: at history time `time` (ns since run start, the midpoint of
a round trip) the store's `TIME` read `store_us` microseconds. Its offset is
`store_ns - history_ns`. A time is converted with the offset of the *nearest* sample (nearest on
the axis of the time being converted), so a store clock that jumps mid-run (a clock fault) is
followed from sample to sample rather than averaged away.

A sample whose round trip took longer than `LONG_RTT_NS` is left out when shorter ones exist: its
midpoint says little about when the store read its clock. A round trip that spans a stopped store
(``pause:store``, a failover's SIGSTOP) is answered only when the store is continued, so its
midpoint lies seconds before the store's reading, and the commands the store runs when continued
would be placed that much too early.
"""
from __future__ import annotations

import bisect
import statistics
from dataclasses import dataclass

LONG_RTT_NS = 250_000_000
# How far a time converted with an offset inferred from the history (no samples) may be off, as
# far as a judgement that needs a bound is concerned (the store model's TRUST_CLIENT_MS).
ESTIMATE_SLACK_NS = 250_000_000


@dataclass
class StoreClock:
    """Offsets `store_ns - history_ns`, looked up by nearest sample. `estimated` is True when the
    offset was inferred from the history and the audit instead of measured."""
    by_store: list[tuple[int, int]]     # (store_ns, offset) sorted by store_ns
    by_history: list[tuple[int, int]]   # (history_ns, offset) sorted by history_ns
    estimated: bool = False
    # How far a converted time may be off: half the longest round trip among the samples used
    # (the store read its clock somewhere inside it); `ESTIMATE_SLACK_NS` for an estimated offset.
    slack_ns: int = 0

    @classmethod
    def from_samples(cls, samples: list[dict]) -> "StoreClock | None":
        """Build from `store-clock.jsonl` samples; None when there are none."""
        short = [s for s in samples if int(s.get("rtt_ns") or 0) <= LONG_RTT_NS]
        used = short or samples
        pairs = [(int(s["time"]), int(s["store_us"]) * 1000) for s in used]
        if not pairs:
            return None
        slack = max(int(s.get("rtt_ns") or 0) for s in used) // 2
        return cls(sorted((st, st - h) for h, st in pairs), sorted((h, st - h) for h, st in pairs), slack_ns=slack)

    @classmethod
    def estimate(cls, windows: list[tuple[float, int, int]]) -> "StoreClock | None":
        """Infer one offset from commands known to have run inside a history window.

        `windows` holds (store time in s, invoke ns, completion ns) for joined commands; the
        median of the window midpoints' offsets is used. None when there is nothing to go on.
        """
        offsets = [round(t * 1e9) - (t0 + t1) // 2 for t, t0, t1 in windows]
        if not offsets:
            return None
        off = int(statistics.median(offsets))
        return cls([(0, off)], [(0, off)], estimated=True, slack_ns=ESTIMATE_SLACK_NS)

    @classmethod
    def fixed(cls, offset_ns: int) -> "StoreClock":
        """A clock with one known offset (also the crude fallback when nothing else is known)."""
        return cls([(0, offset_ns)], [(0, offset_ns)], estimated=True, slack_ns=ESTIMATE_SLACK_NS)

    def to_history_ns(self, store_s: float) -> int:
        """History time (ns since run start) for a store time in seconds."""
        store_ns = round(store_s * 1e9)
        return store_ns - _nearest(self.by_store, store_ns)

    def to_store_s(self, history_ns: int) -> float:
        """Store time in seconds for a history time."""
        return (history_ns + _nearest(self.by_history, history_ns)) / 1e9


def _nearest(points: list[tuple[int, int]], x: int) -> int:
    """The offset of the point nearest `x` (the earlier one of two as near); ValueError for none."""
    if not points:
        raise ValueError("no clock points")
    i = bisect.bisect_left(points, (x,))
    if i == 0:
        return points[0][1]
    if i == len(points):
        return points[-1][1]
    a, b = points[i - 1], points[i]
    return a[1] if abs(a[0] - x) <= abs(b[0] - x) else b[1]
