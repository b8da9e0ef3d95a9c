"""The diagnosis: why claims were lost, in plain words (`checkers/present/diagnosis.py`), from the
fields the properties before it found. Judges nothing; when the run is valid it says why its
releases found nothing."""
from __future__ import annotations

from leasecheck.checkers.present.diagnosis import diagnose
from leasecheck.checkers.measures.measure import Measured
from leasecheck.checkers.result import Part

ORDER = 110
FIELDS = {"diagnosis": []}


def check(m: Measured, found) -> Part:
    said = diagnose(found)
    part = Part({"diagnosis": said})
    if found.get("releases_found_nothing"):
        part.notes.append(f"{found['releases_found_nothing']} release(s) found nothing: their claim "
                          f"was gone before the release: {'; '.join(said)}")
    return part
