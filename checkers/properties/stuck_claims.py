"""Stuck claims (liveness): a claim still in the store longer than TTL + allowance after its
holder's attempt ended — it released, raised, or died with its worker (``kill:holder``) — fails
the run, with how long it stayed and whose it was; claims with no expiry are counted and named
(a claim written without an expiry outlives a holder that dies for good). Needs the audit.
The rule: docs/history.md, "Liveness".
"""
from __future__ import annotations

from leasecheck.checkers.measures.liveness import allowance_s, no_expiry, stuck
from leasecheck.checkers.measures.measure import Measured
from leasecheck.checkers.present.liveness_witness import stuck_witness
from leasecheck.checkers.result import Part

ORDER = 96
KIND = "liveness"
FIELDS = {"stuck_claims": None, "no_expiry": None}


def check(m: Measured, found) -> Part:
    if m.nodes is not None:
        return Part(notes=["the claims of a run of several store nodes are not followed for stuck claims"])
    if m.model is None:
        part = Part()
        part.doubts.append("without the store's audit no claim is seen, so a stuck claim cannot be found")
        return part
    ttl_s = float(m.config.get("ttl_ms") or 0) / 1000
    first, count, stepped = stuck(m, ttl_s)
    named, bare = no_expiry(m)
    part = Part({"stuck_claims": {"count": count, "bound_s": round(ttl_s + allowance_s(ttl_s), 3), "first": first,
                                  "across_clock_step": stepped},
                 "no_expiry": {"count": bare, "first": named}})
    if count:
        s = first[0]
        stayed = f"at least {s['stayed_s']:g} s (it was still there when the run ended)" if s["still_held"] \
            else f"{s['stayed_s']:g} s"
        part.failures.append(
            f"{count} stuck claim(s): attempt {s['attempt']}'s claim on {s['key']} outlived its holder by {stayed}: "
            f"{s['cause']} (its attempt ended at {s['holder_ended_s']:.3f} s: {s['how']}; the bound is the TTL + "
            f"allowance, {part.fields['stuck_claims']['bound_s']:g} s)")
        part.witness.append(stuck_witness(m, s))
    else:
        part.notes.append(f"no claim outlived its holder's attempt by more than the TTL + allowance "
                          f"({part.fields['stuck_claims']['bound_s']:g} s)")
    if stepped:
        part.notes.append(f"{stepped} claim(s) outlived their holder across a step of the store's clock (a clock "
                          "fault's start or heal): the store's clock kept them, not the lease")
    if bare:
        part.notes.append(f"{bare} claim(s) had no expiry (e.g. attempt {named[0]['attempt']} on {named[0]['key']})")
    return part
