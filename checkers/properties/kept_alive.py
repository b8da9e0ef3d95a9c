"""Claims kept alive by another attempt (liveness): a command of an attempt that does not hold a
live claim lengthened its expiry (``PEXPIRE``, ``EXPIRE``, ``PERSIST``, ``GETEX``, a script's) —
a contender that refreshes a key it failed to claim keeps a dead holder's claim in the store for
as long as anyone tries. Any such command fails the run. Needs the audit. (A ``SET`` of another
attempt over a live claim replaces it: a foreign release, judged by safety.)
"""
from __future__ import annotations

from leasecheck.checkers.measures.measure import Measured
from leasecheck.checkers.present.liveness_witness import kept_entries, kept_sentence, kept_witness
from leasecheck.checkers.result import Part

ORDER = 97
KIND = "liveness"
FIELDS = {"kept_alive": None}


def check(m: Measured, found) -> Part:
    if m.model is None:
        return Part()        # stuck_claims says why nothing can be seen without the audit
    commands, claims, first = kept_entries(m)
    part = Part({"kept_alive": {"commands": commands, "claims": claims, "first": first}})
    if commands:
        k = first[0]
        part.failures.append(
            f"{claims} claim(s) kept alive by another attempt ({commands} command(s) of attempts that did not hold "
            f"the claim lengthened its expiry): {kept_sentence(k)}; the first such command was attempt {k['by']}'s "
            f"{k['f']} ({k['command']}, audit.log line {k['line']}, at {k['time_s']:.3f} s)")
        part.witness.append(kept_witness(m, k))
    else:
        part.notes.append("no attempt lengthened the expiry of a claim it did not hold")
    return part
