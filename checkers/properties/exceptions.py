"""Exceptions: what the lease raised, counted by type with the first example (`exceptions`),
in every checked run. A lease that raised on every attempt — its constructor, or every call it
made — did nothing that can be judged: the verdict is unknown, and its reason names the
exception and the first attempt. A lease that raised now and then is judged as usual (a call
that raised is a call whose outcome is unknown); the count is reported. Needs only the history."""
from __future__ import annotations

from leasecheck.checkers.measures.exceptions import CONSTRUCTOR
from leasecheck.checkers.measures.measure import Measured
from leasecheck.checkers.result import Part

ORDER = 25          # before `evidence`: its "no claim was seen" follows from this one
FIELDS = {"exceptions": None}


def check(m: Measured, found) -> Part:
    seen = m.digest.exceptions
    part = Part({"exceptions": seen.to_dict()})
    if not seen.count:
        return part
    first = seen.first
    where = "its constructor" if first["in"] == CONSTRUCTOR else f"{first['in']}()"
    example = f"{first['type']}: {first['message']}" if first["message"] else first["type"]
    kinds = ", ".join(f"{n} {t}" for t, n in part.fields["exceptions"]["by_type"].items())
    if seen.every_attempt_raised:
        part.doubts.append(f"the lease raised on every attempt: {example} (first in {where}, attempt "
                           f"{first['attempt']}; {seen.count} exception(s): {kinds}), so nothing it did can be "
                           "judged; fix the lease")
    else:
        part.notes.append(f"the lease raised {seen.count} exception(s) ({kinds}; first {example} in {where}, "
                          f"attempt {first['attempt']}); each such call's outcome was taken as unknown")
    return part
