"""Faults must prove they acted: one that did not take effect, could not be shown to have, or
never fired leaves the verdict unknown (`faults.doubts`)."""
from __future__ import annotations

from leasecheck.checkers.read.faults import doubts
from leasecheck.checkers.measures.measure import Measured
from leasecheck.checkers.result import Part

ORDER = 50
FIELDS = {"faults": [], "faults_not_fired": []}


def check(m: Measured, found) -> Part:
    faults, not_fired = m.faults(), m.digest.faults.not_fired()
    return Part({"faults": faults, "faults_not_fired": not_fired}, doubts=doubts(faults, not_fired))
