"""Stale effects: a job's effect written when its attempt held no live claim (`effects`).
Reported, not judged: how many a fence turned away is the lease's own result."""
from __future__ import annotations

from leasecheck.checkers.measures.effects import stale_effects
from leasecheck.checkers.measures.measure import Measured
from leasecheck.checkers.result import Part

ORDER = 90
FIELDS = {"stale_effects": None}


def check(m: Measured, found) -> Part:
    stale = m.model.stale if m.model is not None else {}
    return Part({"stale_effects": stale_effects(m.digest.effect_ops, stale, m.digest.effects,
                                                m.claims, m.clock)})
