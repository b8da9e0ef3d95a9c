"""Hazard coverage: what dangerous moments the run reached (`checkers/measures/hazards.py`), in
``hazards``. It fails nothing and doubts nothing: a measure of the run, not a property of the
lease. When the run reached none of a hazard that what the lease does needs (a release at an
expiry for a lease that releases, a renewal at its expiry for one that renews), its note says so
— the verdict line then reads "VALID — but no release was in flight at an expiry: a
check-then-act release was not exercised"."""
from __future__ import annotations

from leasecheck.checkers.measures.hazards import missed_sentence
from leasecheck.checkers.measures.measure import Measured
from leasecheck.checkers.model import replicated
from leasecheck.checkers.result import Part

ORDER = 98          # before `diagnosis`: its note is not the last word of a VALID
FIELDS = {"hazards": None}


def check(m: Measured, found) -> Part:
    fo = replicated.measured(m)
    hazards = m.digest.hazards.to_dict(len(fo.lost) if fo is not None else None)
    return Part({"hazards": hazards}, notes=[missed_sentence(n) for n in hazards["missed"]])
