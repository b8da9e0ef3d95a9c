"""The result of a check, one schema for every path: `Result` is what `results.json` holds, field
by field and in that order, whether the run was checked (`verdict.check`) or could not be
(`verdict.failed`); `Part` is what one property (`checkers.properties`) contributes to it.

Validity is three-valued, as in Jepsen: True, False, or "unknown". Merging parts (`merge`), as
Jepsen's `checker/compose` does, False beats "unknown" beats True; the reasons are every part's
failures in property order, then every part's doubts in property order, or — when all parts are
true — every part's notes (what was checked and found fine).
"""
from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any, Literal, Union

Validity = Union[bool, Literal["unknown"]]
# The certainty entries in the order results.json lists them (others follow in property order).
CERTAINTY_ORDER = ("foreign_releases", "overlap", "releases_found_nothing", "claims")


@dataclass
class Part:
    """One property's share of the result: its fields of `Result`, and its own validity."""
    fields: dict[str, Any] = field(default_factory=dict)
    failures: list[str] = field(default_factory=list)   # proven violations: valid False
    doubts: list[str] = field(default_factory=list)     # why it cannot be decided: valid "unknown"
    notes: list[str] = field(default_factory=list)      # said when the whole verdict is true
    certainty: dict[str, str] = field(default_factory=dict)
    witness: list[dict] = field(default_factory=list)   # {"kind", "markdown", ...}: a readable timeline

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


@dataclass
class Result:
    """`results.json` (docs/history.md describes each field). `witnesses` is written only when
    more than one foreign-release witness was asked for."""
    schema_version: int
    valid: Validity = "unknown"
    reasons: list[str] = field(default_factory=list)
    foreign_releases: int = 0
    # each foreign release (the first FOREIGN_LISTED): who removed whose claim, when (the report's lanes)
    foreign_releases_first: list[dict] = field(default_factory=list)
    overlap: dict | None = None
    releases_found_nothing: int = 0
    releases_found_nothing_rate: float = 0.0
    releases_found_nothing_outcomes: dict[str, int] = field(default_factory=dict)
    releases_found_nothing_first: list[dict] = field(default_factory=list)
    releases_unknown: int = 0
    claims: dict[str, int] = field(default_factory=dict)
    ops: int = 0
    duration_s: float = 0.0
    audit: dict = field(default_factory=lambda: {"present": False, "complete": False, "lines": 0,
                                                 "unattributed": 0})
    disagreements: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    witness: dict | None = None
    token_reuse: dict | None = None
    walk_ins: int = 0
    faults: list[dict] = field(default_factory=list)
    stale_effects: dict | None = None
    claims_seen: dict | None = None
    early_loss: dict | None = None
    expiry_edge: dict = field(default_factory=lambda: {"count": 0, "examples": []})
    certainty: dict[str, str] = field(default_factory=dict)
    witnesses: list[dict] | None = None
    faults_not_fired: list[dict] = field(default_factory=list)
    lost_while_held: dict | None = None
    interrupted: dict | None = None
    diagnosis: list[str] = field(default_factory=list)

    def to_dict(self) -> dict:
        out = {f.name: getattr(self, f.name) for f in _FIELDS}
        if out["witnesses"] is None:
            del out["witnesses"]
        return out

    def add(self, part: Part) -> None:
        """Take `part`'s fields (names of this schema only)."""
        for name, value in part.fields.items():
            if name not in _NAMES:
                raise KeyError(f"a property wrote {name!r}, which the result schema does not have")
            setattr(self, name, value)

    @classmethod
    def merged(cls, schema_version: int, parts: list[Part], **measured) -> "Result":
        """The result of `parts` (in property order) on top of the `measured` fields."""
        result = cls(schema_version, **measured)
        certainty: dict[str, str] = {}
        for p in parts:
            result.add(p)
            certainty.update(p.certainty)
        result.certainty = {k: certainty[k] for k in CERTAINTY_ORDER if k in certainty} | certainty
        for p in parts:
            for w in p.witness:
                if result.witness is None:
                    result.witness = dict(w)
                else:
                    result.witness["markdown"] += "\n" + w["markdown"]
        result.valid = merge_validity(parts)
        failures = [r for p in parts for r in p.failures]
        doubts = [r for p in parts for r in p.doubts]
        result.reasons = failures + doubts if failures or doubts else [r for p in parts for r in p.notes]
        return result


_FIELDS = fields(Result)
_NAMES = frozenset(f.name for f in _FIELDS)
