"""Releases that found nothing: the sign that a claim was gone before its job finished
(`releases`), by what the release met under its key when the audit tells (`crosscheck`).
Reported, never failed on its own: the diagnosis says why."""
from __future__ import annotations

from leasecheck.checkers.model.crosscheck import FOUND_NOTHING
from leasecheck.checkers.measures.measure import Measured
from leasecheck.checkers.result import Part

ORDER = 80
FIELDS = {"releases_found_nothing": 0, "releases_found_nothing_rate": 0.0,
          "releases_found_nothing_outcomes": {k: 0 for k in FOUND_NOTHING},
          "releases_found_nothing_first": [], "releases_unknown": 0}
CERTAINTY = ("releases_found_nothing",)


def check(m: Measured, found) -> Part:
    rel = m.digest.releases
    if m.model is not None:
        outcomes = dict(m.model.found_nothing)
    else:
        outcomes = {k: 0 for k in FOUND_NOTHING} | {"unknown": rel.found_nothing}
    first = [{"attempt": op.attempt, "key": op.key, "time_s": round(op.invoke_time / 1e9, 3),
              "outcome": op.outcome or "unknown"} for op in rel.first]
    return Part({"releases_found_nothing": rel.found_nothing, "releases_found_nothing_rate": rel.rate,
                 "releases_found_nothing_outcomes": outcomes, "releases_found_nothing_first": first,
                 "releases_unknown": rel.unknown},
                certainty={"releases_found_nothing": "certain"})
