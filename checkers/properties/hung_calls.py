"""Hung calls (liveness): a lease call a worker reported still running after the run's call bound
(`call_hung`, `checkers/measures/hung_calls.py`) fails the run, naming the attempt, the call, how
long it had run and the innermost lines of its stack. Read from the history alone.

A hung call is a liveness failure, not a safety one: the lease may never have broken mutual
exclusion, yet a worker stuck forever in ``acquire`` is a lease no one can use. For now it is one
more failing property (docs/history.md, Hung calls); safety and liveness as two verdicts side by
side come later.
"""
from __future__ import annotations

from leasecheck.checkers.measures.hung_calls import sentence
from leasecheck.checkers.measures.measure import Measured
from leasecheck.checkers.result import Part

ORDER = 95
KIND = "liveness"     # reported under the liveness verdict (docs/history.md, Liveness)
FIELDS = {"hung_calls": None}


def check(m: Measured, found) -> Part:
    hung = m.digest.hung
    part = Part({"hung_calls": hung.to_dict()})
    if hung.count:
        part.failures.append(sentence(hung.first[0], hung.count))
    return part
