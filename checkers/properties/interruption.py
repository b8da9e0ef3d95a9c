"""Interruption: a run cut short tested less than it was asked to, so it is never valid (a
proven violation stands) — `checkers/measures/interruption.py` decides it from the history."""
from __future__ import annotations

from leasecheck.checkers.measures.interruption import sentence
from leasecheck.checkers.measures.measure import Measured
from leasecheck.checkers.result import Part

ORDER = 100
FIELDS = {"interrupted": None}


def check(m: Measured, found) -> Part:
    digest = m.digest
    interrupted = digest.span.interrupted(digest.config or m.config, digest.end)
    return Part({"interrupted": interrupted}, doubts=[sentence(interrupted)] if interrupted else [])
