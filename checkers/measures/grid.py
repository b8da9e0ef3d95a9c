"""Time buckets that grow by halving their resolution: a run of any length fits in a fixed
number of buckets, so the report's memory and its drawing stay bounded (a 1-hour run is drawn
with as many shapes as a 20-second one).

`Grid` owns the bucket width; arrays registered with it are merged pairwise whenever an event
lands past the last bucket (the width doubles). Each array says how two neighbours merge: sums
for coverage and counts, a bounded sample for latencies.
"""
from __future__ import annotations

import random
from typing import Any, Callable, Final

SAMPLES = 3   # latency points kept per bucket, kind and outcome (besides the extremes)
# deterministic: a report regenerated from the same files is the same
_RNG: Final = random.Random(0)


class Grid:
    def __init__(self, n: int, width_ns: float) -> None:
        self.n = n
        self.width = max(1, int(width_ns))
        self._arrays: list[tuple[list, Callable, Callable]] = []

    def array(self, zero: Callable[[], object], merge: Callable) -> list:
        """A new array of `n` buckets, merged with `merge(a, b)` when the width doubles."""
        values = [zero() for _ in range(self.n)]
        self._arrays.append((values, zero, merge))
        return values

    def index(self, t: int) -> int:
        """The bucket of history time `t` (ns), widening the grid until it fits."""
        while t >= self.n * self.width:
            self._double()
        return max(0, t // self.width)

    def cover(self, values: list, t0: int, t1: int) -> None:
        """Add the nanoseconds of [t0, t1) that fall into each bucket to `values`."""
        if t1 <= t0:
            return
        last = self.index(t1 - 1)
        i = self.index(t0)
        w = self.width
        while i <= last:
            lo, hi = max(t0, i * w), min(t1, (i + 1) * w)
            values[i] += hi - lo
            i += 1

    def _double(self) -> None:
        half = self.n // 2
        for values, zero, merge in self._arrays:
            values[:] = ([merge(values[2 * i], values[2 * i + 1]) for i in range(half)]
                         + [zero() for _ in range(self.n - half)])
        self.width *= 2


def add(a, b):
    return a + b


class Samples:
    """Latencies of one bucket: count, min, max and a few uniformly drawn samples."""
    __slots__ = ("count", "lo", "hi", "picks")

    def __init__(self) -> None:
        self.count = 0
        self.lo: tuple[Any, float] | None = None
        self.hi: tuple[Any, float] | None = None
        self.picks: list[tuple[Any, float]] = []

    def add(self, t: int, ms: float) -> None:
        self.count += 1
        if self.lo is None or ms < self.lo[1]:
            self.lo = (t, ms)
        if self.hi is None or ms > self.hi[1]:
            self.hi = (t, ms)
        if len(self.picks) < SAMPLES:
            self.picks.append((t, ms))
        elif _RNG.random() * self.count < SAMPLES:   # reservoir sampling: each kept with SAMPLES/count
            self.picks[int(_RNG.random() * SAMPLES)] = (t, ms)

    def points(self) -> list[tuple[Any, float]]:
        return sorted({p for p in self.picks + [self.lo, self.hi] if p is not None})

    @staticmethod
    def merge(a: "Samples", b: "Samples") -> "Samples":
        out = Samples()
        out.count = a.count + b.count
        out.lo = min((p for p in (a.lo, b.lo) if p), key=lambda p: p[1], default=None)
        out.hi = max((p for p in (a.hi, b.hi) if p), key=lambda p: p[1], default=None)
        pool = a.picks + b.picks
        out.picks = pool if len(pool) <= SAMPLES else _RNG.sample(pool, SAMPLES)
        return out
