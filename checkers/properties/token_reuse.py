"""Fresh holder tokens: no two attempts may create claims with the same value (`tokens`); a
reuse fails the run and adds its timeline to the witness. Needs the audit's claims."""
from __future__ import annotations

from leasecheck.checkers.measures.measure import Measured
from leasecheck.checkers.result import Part
from leasecheck.rundir import AUDIT
from leasecheck.checkers.measures.tokens import reuse_markdown, token_reuse

ORDER = 20
FIELDS = {"token_reuse": None}


def check(m: Measured, found) -> Part:
    if m.model is None:
        return Part({"token_reuse": None})
    reuse = token_reuse(m.model.claims)
    part = Part({"token_reuse": reuse.to_dict()})
    if reuse.tokens:
        part.failures.append(
            f"holder tokens are not fresh per attempt: {reuse.attempts} attempts shared "
            f"{reuse.tokens} token value(s) (first at {AUDIT} line {reuse.line}: "
            f"{', '.join(reuse.example)}); a late release of one can delete another's claim")
    md = reuse_markdown(reuse, lambda store_s: m.clock.to_history_ns(store_s) / 1e9)
    if md:
        part.witness.append({"kind": "token_reuse", "markdown": md})
    return part
