"""The result of a check, one schema for every path: `Result` is what `results.json` holds, field
by field and in that order, whether the run was checked (`verdict.check`) or could not be
(`verdict.failed`); `Part` is what one property (`leasecheck.checkers.properties`) contributes to it.

Validity is three-valued, as in Jepsen: True, False, or "unknown". Merging parts (`merge`), as
Jepsen's `checker/compose` does, False beats "unknown" beats True; the reasons are every part's
failures in property order, then every part's doubts in property order, or — when all parts are
true — every part's notes (what was checked and found fine).
"""
from __future__ import annotations

from dataclasses import dataclass, field, fields
from enum import Enum
from typing import Any, Literal, Union

Validity = Union[bool, Literal["unknown"]]
SAFETY, LIVENESS = "safety", "liveness"     # the two verdicts a property's KIND counts towards
WARN = "warn"                               # config liveness: liveness findings only warn


@dataclass
class Part:
    """One property's share of the result: its fields of `Result`, and its own validity."""
    fields: dict[str, Any] = field(default_factory=dict)
    failures: list[str] = field(default_factory=list)   # proven violations: valid False
    doubts: list[str] = field(default_factory=list)     # why it cannot be decided: valid "unknown"
    notes: list[str] = field(default_factory=list)      # said when the whole verdict is true
    certainty: dict[str, str] = field(default_factory=dict)
    witness: list[dict] = field(default_factory=list)   # {"kind", "markdown", ...}: a readable timeline
    kind: str = SAFETY   # which verdict it counts towards: its property's KIND (safety or liveness)

    @property
    def valid(self) -> Validity:
        return False if self.failures else "unknown" if self.doubts else True

    @property
    def reasons(self) -> list[str]:
        return self.failures + self.doubts if self.failures or self.doubts else list(self.notes)


def merge_validity(parts) -> Validity:
    """False beats "unknown" beats True (an empty list is True)."""
    valid: Validity = True
    for p in parts:
        if p.valid is False:
            return False
        if p.valid == "unknown":
            valid = "unknown"
    return valid


class _Omitted(Enum):
    OMITTED = "omitted"


# A property field's value that leaves the field out of results.json (unless the property sets it).
OMITTED = _Omitted.OMITTED


@dataclass
class Result:
    """`results.json` (docs/history.md describes each field): the verdict, then the fields the
    properties own (`properties`, in property order: `leasecheck.checkers.properties` declares them), then
    what was measured of the run itself."""
    schema_version: int
    valid: Validity = "unknown"
    reasons: list[str] = field(default_factory=list)
    properties: dict[str, Any] = field(default_factory=dict)
    ops: int = 0
    duration_s: float = 0.0
    audit: dict = field(default_factory=lambda: {"present": False, "complete": False, "lines": 0,
                                                 "unattributed": 0})
    disagreements: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    safety: dict = field(default_factory=lambda: {"valid": "unknown", "reasons": []})
    liveness: dict = field(default_factory=lambda: {"valid": "unknown", "reasons": [], "mode": "fail"})
    warnings: list[str] = field(default_factory=list)
    witness: dict | None = None
    certainty: dict[str, str] = field(default_factory=dict)
    # whose finding a failed run is: "store" (only the store broke the lease's promise), "lease", or null
    failure_of: str | None = None

    def to_dict(self) -> dict:
        head = {"schema_version": self.schema_version, "valid": self.valid, "reasons": self.reasons,
                "safety": self.safety, "liveness": self.liveness, "warnings": self.warnings}
        owned = {k: v for k, v in self.properties.items() if v is not OMITTED}
        tail = {f.name: getattr(self, f.name) for f in _FIELDS if f.name not in head and f.name != "properties"}
        return head | owned | tail

    def add(self, part: Part) -> None:
        """Take `part`'s fields (fields the properties own only)."""
        for name, value in part.fields.items():
            if name not in self.properties:
                raise KeyError(f"a property wrote {name!r}, which the result schema does not have")
            self.properties[name] = value

    @classmethod
    def merged(cls, schema_version: int, parts: list[Part], owned: dict | None = None,
               certainty: dict[str, str] | None = None, liveness: str = "fail", **measured) -> "Result":
        """The result of `parts` (in property order) on top of the `measured` fields. `owned`:
        the properties' fields with their values for a run not checked (`Properties.fields`);
        `certainty`: their certainty entries, all unknown (`Properties.certainty`).

        Two verdicts side by side: `safety` of the parts of kind safety, `liveness` of those of
        kind liveness, each with its own reasons (as the whole's are made). The overall `valid` and
        `reasons` are of every part; with `liveness` "warn" they are safety's alone, and liveness's
        failures and doubts become `warnings`."""
        result = cls(schema_version, properties=dict(owned or {}), **measured)
        said = dict(certainty or {})
        for p in parts:
            result.add(p)
            said.update(p.certainty)
        result.certainty = said
        for p in parts:
            for w in p.witness:
                if result.witness is None:
                    result.witness = dict(w)
                else:
                    result.witness["markdown"] += "\n" + w["markdown"]
        safe = [p for p in parts if p.kind != LIVENESS]
        live = [p for p in parts if p.kind == LIVENESS]
        result.safety = {"valid": merge_validity(safe), "reasons": _reasons(safe)}
        result.liveness = {"valid": merge_validity(live) if live else "unknown",   # nothing checked it
                           "reasons": _reasons(live) if live else ["no liveness property was checked"],
                           "mode": liveness}
        judged = safe if liveness == WARN else parts
        result.valid = merge_validity(judged)
        result.reasons = _reasons(judged)
        if liveness == WARN:
            result.warnings = [r for p in live for r in p.failures + p.doubts]
        return result


def _reasons(parts: list[Part]) -> list[str]:
    """Every failure, then every doubt, in property order; or every note when there are none."""
    failures = [r for p in parts for r in p.failures]
    doubts = [r for p in parts for r in p.doubts]
    return failures + doubts if failures or doubts else [r for p in parts for r in p.notes]


_FIELDS = fields(Result)
