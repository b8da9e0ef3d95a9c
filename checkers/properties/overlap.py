"""Overlap: runs of the same job at once, from the history (`checkers/measures/overlap.py`), with why
each happened and why claims were lost while held (`causes`; in a replicated run from its claims
across the nodes, `replicated.resolved_claims`, and ``split_brain`` for two holders on two nodes,
`leasecheck.checkers.measures.split_brain`). Fails the run only above `config["max_overlap"]`
when that is set."""
from __future__ import annotations

from leasecheck.checkers.measures import split_brain
from leasecheck.checkers.model import replicated
from leasecheck.checkers.measures.causes import lost_while_held, overlap_causes
from leasecheck.checkers.measures.measure import Measured
from leasecheck.checkers.measures.overlap import overlap
from leasecheck.checkers.result import Part

ORDER = 70
FIELDS = {"overlap": {"count": 0, "rate": 0.0, "max_concurrency": 0, "concurrency_time_s": {},
                      "per_key": {}, "causes": {}},
          "lost_while_held": None}
CERTAINTY = ("overlap",)


def check(m: Measured, found) -> Part:
    jobs, end, ttl_ms, claims = m.jobs, m.end, m.digest.ttl_ms, m.claims
    ov = overlap(jobs, end)
    # Without the audit there are no claims: every overlap's cause is "unknown".
    to_history = m.to_history()
    fo = replicated.measured(m)
    split = None
    if fo is not None:      # a replicated run: its claims across the nodes, times in history seconds
        claims, to_history = fo.claims, _seconds_to_ns
        held = {h.attempt for h in m.holds}
        split = {frozenset((x.claim.owner, x.rival.owner))
                 for x in split_brain.off_primary(m.nodes, fo.failovers, held) if x.rival is not None}
    windows = m.windows()
    paused = windows.holder_paused(to_history) if to_history and windows else None
    fields = {"overlap": ov.to_dict() | {"causes": overlap_causes(jobs, end, claims, ttl_ms, paused, split)},
              "lost_while_held": lost_while_held(claims, jobs, to_history, ttl_ms, paused)}
    part = Part(fields, certainty={"overlap": "certain"})
    limit = m.config.get("max_overlap")
    if limit is not None and ov.rate > limit:
        part.failures.append(
            f"jobs overlapped {ov.rate:.1%} of the busy time ({ov.count} runs started while "
            f"another run of the same key was in progress), above max_overlap {limit:.1%}")
    within = "no max_overlap set" if limit is None else f"within max_overlap {limit:.1%}"
    part.notes.append(f"jobs overlapped {ov.rate:.1%} of the busy time ({ov.count} overlapping "
                      f"start(s)); {within}")
    return part


def _seconds_to_ns(t: float) -> int:
    return round(t * 1e9)
