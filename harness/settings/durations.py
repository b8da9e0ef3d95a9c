"""Durations and duration distributions, as written on the command line.

A *duration* is a number with a unit: ``400ms``, ``1.6s``, ``2m``, ``250us``; a bare number
means seconds.

A *distribution* (``--job-duration``, ``--retry-delay``) is a comma-separated mixture of parts,
each ``[WEIGHT%:]SHAPE``:

- ``0.4s``           always 0.4 s
- ``0.2s..0.6s``     uniform between the two
- ``exp:0.4s``       exponential with mean 0.4 s

Weights are percentages; parts without one share what the others leave. For example the
default job duration ``90%:0.4s,10%:1.6s`` is the lease-deadline incident scaled down: a job usually
takes 0.4 s and one time in ten 1.6 s, against a 1 s lease.

A run's job durations take the weights as exact shares, not as odds (`JobDraws`): numbered in the
order they start, counted across every worker, the run's jobs fall in blocks (`Distribution.block`,
10 for the default) in which each part has its exact share, in an order shuffled by the seed. So one
of the default's first ten jobs runs past its deadline, where independent draws missed all ten one
run in three (0.9^10): a short run of a broken lease meets the incident it is about. Back-offs
(``--retry-delay``) are drawn independently.
"""
from __future__ import annotations

import itertools
import random
import re
from dataclasses import dataclass
from typing import Callable

from leasecheck.harness.errors import UsageError

_UNITS = {"us": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}
_DURATION = re.compile(r"^\s*(\d+(?:\.\d*)?|\.\d+)\s*(us|ms|s|m|h)?\s*$")


def parse_duration(text: str, what: str = "duration") -> float:
    """Seconds in ``text`` (``400ms``, ``1.6s``, ``2m``; bare numbers are seconds)."""
    m = _DURATION.match(str(text))
    if not m:
        raise UsageError(f"{what} {text!r} is not a duration; write e.g. 400ms, 1.6s or 2m")
    return float(m.group(1)) * _UNITS[m.group(2) or "s"]


@dataclass(frozen=True)
class _Part:
    weight: float
    kind: str  # "fixed", "uniform", "exp"
    a: float
    b: float = 0.0

    def sample(self, rng: random.Random) -> float:
        if self.kind == "fixed":
            return self.a
        if self.kind == "uniform":
            return rng.uniform(self.a, self.b)
        return rng.expovariate(1.0 / self.a) if self.a > 0 else 0.0


@dataclass(frozen=True)
class Distribution:
    """A mixture of fixed, uniform and exponential parts; ``sample`` draws seconds."""

    text: str
    parts: tuple[_Part, ...]

    def sample(self, rng: random.Random) -> float:
        x = rng.random() * 100.0
        for part in self.parts:
            x -= part.weight
            if x < 0:
                return part.sample(rng)
        return self.parts[-1].sample(rng)

    @property
    def block(self) -> int:
        """The fewest jobs (at most 100) in which every part's weight is a whole number of jobs: 10
        for ``90%:0.4s,10%:1.6s``, 4 for ``75%:0.4s,25%:2s``; 0 for one part, or for weights no
        such block fits (``33%:1s,67%:2s`` needs 100 and gets it; ``12.345%:...`` none)."""
        if len(self.parts) < 2:
            return 0
        for n in range(2, 101):
            if all(abs(p.weight * n / 100.0 - round(p.weight * n / 100.0)) < 1e-6 for p in self.parts):
                return n
        return 0

    def job_draws(self, seed: object, numbers: Callable[[], int] | None = None) -> Callable[[random.Random], float]:
        """How a slot draws its jobs' durations (``draws(rng)``, seconds): `JobDraws` of this
        distribution where it has a `block`, else `sample` (independent draws). ``numbers()``
        gives the run-wide number of the job about to start (``job_numbers.JobNumbers``); without
        it the slot numbers its own jobs."""
        if not self.block:
            return self.sample
        return JobDraws(self, seed, numbers)

    @property
    def max_s(self) -> float:
        """The largest value a draw can take (the mean x 10 for exponential parts)."""
        return max(p.b if p.kind == "uniform" else (p.a * 10 if p.kind == "exp" else p.a)
                   for p in self.parts)


class JobDraws:
    """Job durations of a mixture, each part taking its exact share of every block of
    `Distribution.block` consecutive jobs of the run: the job numbered n (``numbers()``, counting
    from 0 in the order jobs start) takes the part at position n mod block of block n // block's
    order, a shuffle seeded by the run's seed and the block's number; the part's value (a uniform
    or exponential part's) is drawn from the slot's own generator. Which part the run's n-th job
    takes is fixed by the seed; which worker runs it, by timing."""

    def __init__(self, dist: Distribution, seed: object, numbers: Callable[[], int] | None) -> None:
        self.parts = dist.parts
        self.size = dist.block
        self.seed = seed
        self.numbers: Callable[[], int] = numbers if numbers is not None else itertools.count().__next__
        self._block = -1
        self._order: list[int] = []

    def order(self, block: int) -> list[int]:
        """The parts' indices in block ``block``, each as often as its share, shuffled."""
        order = [i for i, p in enumerate(self.parts) for _ in range(round(p.weight * self.size / 100.0))]
        random.Random(f"{self.seed}:job-mix:{block}").shuffle(order)
        return order

    def __call__(self, rng: random.Random) -> float:
        block, at = divmod(self.numbers(), self.size)
        if block != self._block:
            self._order, self._block = self.order(block), block
        return self.parts[self._order[at]].sample(rng)


def parse_distribution(text: str, what: str = "--job-duration") -> Distribution:
    """Parse ``[WEIGHT%:]SHAPE[,...]``; errors name the option and show a valid example."""
    hint = f"{what} {text!r}: write e.g. '90%:0.4s,10%:1.6s', '0.2s..0.6s' or 'exp:0.4s'"
    raw: list[tuple[float | None, str]] = []
    for chunk in str(text).split(","):
        chunk = chunk.strip()
        if not chunk:
            raise UsageError(f"{hint} (empty part)")
        weight: float | None = None
        if "%:" in chunk:
            given_weight, chunk = chunk.split("%:", 1)
            try:
                weight = float(given_weight)
            except ValueError:
                raise UsageError(f"{hint} ({given_weight!r} is not a percentage)") from None
            if not 0 <= weight <= 100:
                raise UsageError(f"{hint} (weight {weight}% is outside 0..100)")
        raw.append((weight, chunk.strip()))
    given = sum(w for w, _ in raw if w is not None)
    free = sum(1 for w, _ in raw if w is None)     # parts without a weight
    if given > 100.0001 or (not free and abs(given - 100) > 0.0001):
        raise UsageError(f"{hint} (weights add up to {given:g}%, not 100%)")
    share = (100.0 - given) / free if free else 0.0
    parts = []
    for weight, shape in raw:
        weight = share if weight is None else weight
        if shape.startswith("exp:"):
            parts.append(_Part(weight, "exp", parse_duration(shape[4:], what)))
        elif ".." in shape:
            lo, hi = (parse_duration(s, what) for s in shape.split("..", 1))
            if hi < lo:
                raise UsageError(f"{hint} (range {shape!r} runs backwards)")
            parts.append(_Part(weight, "uniform", lo, hi))
        else:
            parts.append(_Part(weight, "fixed", parse_duration(shape, what)))
    return Distribution(str(text), tuple(parts))
