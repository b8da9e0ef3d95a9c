"""When the run first went wrong: the earliest proven violation — a foreign release, a reused
holder token, a claim lost early — as seconds on the history clock. How long a schedule of
faults took to expose a mistake is what `leasecheck hunt` and the detection benchmark compare;
reported, never judged (the properties that found each violation judge it). A claim lost early
is timed where the newcomer started (`early_loss.first`): in a replicated run, a claim lost in
failover when the newcomer's acquire won the key; a split brain when the later of its two claims
was created."""
from __future__ import annotations

from leasecheck.checkers.measures.measure import Measured
from leasecheck.checkers.result import Part
from leasecheck.checkers.measures.tokens import token_reuse

ORDER = 105
FIELDS = {"first_violation": None}


def check(m: Measured, found) -> Part:
    seen = [v for v in (_foreign(m), _reused(m, found), _early(found), _split(found)) if v is not None]
    if not seen:
        return Part({"first_violation": None})
    kind, at = min(seen, key=lambda v: v[1])
    return Part({"first_violation": {"kind": kind, "time_s": round(at, 3)}})


def _foreign(m: Measured):
    if m.model is not None:
        if m.model.foreign:
            return "foreign_release", m.clock.to_history_ns(m.model.foreign[0].time) / 1e9
        return None
    proven = m.digest.proof.proven(m.digest.faults.starts)
    return ("foreign_release", proven[0].invoke_time / 1e9) if proven else None


def _reused(m: Measured, found):
    if m.model is None or not (found.get("token_reuse") or {}).get("tokens"):
        return None
    second = token_reuse(m.model.claims).first[1]
    return "token_reuse", m.clock.to_history_ns(second.created) / 1e9


def _early(found):
    first = (found.get("early_loss") or {}).get("first") or []
    return ("early_loss", first[0]["newcomer_start_s"]) if first else None


def _split(found):
    brains = [x for x in ((found.get("split_brain") or {}).get("examples") or []) if x.get("rival")]
    return ("split_brain", min(max(x["created_s"], x["rival_created_s"]) for x in brains)) if brains else None
