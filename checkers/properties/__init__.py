"""The checked properties, one module each, composed into the verdict.

A property is a module of this package that declares

    ORDER = 70                  # its place: the order of the reasons and of results.json's fields
    FIELDS = {"overlap": {...}} # the fields of results.json it owns, with the value each has
                                # when the run could not be checked (`result.OMITTED`: left out)
    CERTAINTY = ("overlap",)    # optional: the certainty entries it sets ("unknown" by default)
    SCHEMAS = {"overlap": {...}}  # optional: a field's JSON Schema, where its default value
                                # (FIELDS) does not say enough (e.g. the items of a list)

    def check(m: measure.Measured, found: Mapping[str, object]) -> result.Part

A property that concerns only some runs may also declare `applies(m) -> bool`; where it is false
the property is skipped (no part, its fields left at their defaults, no JUnit case).

`check` reads the measured run `m` (the history's digest, and with an audit the store model's
claims, the join and the store clock) and returns its share of the result: values for its own
fields, its failures (valid False), its doubts (valid "unknown"), the notes it says when all is
well, its certainty entries and any witness timeline. `found` holds the fields of the properties
before it (the diagnosis reads them); a property never writes another's field (checked).
`verdict.check` runs the properties in `ORDER` and merges the parts (`result.Result.merged`):
False beats "unknown" beats True; failures come first, in this order, then doubts.

The registry is built here and nowhere else: every module of this package is imported, and every
one with a `check` is a property. Adding a property is one module here and its tests.
"""
from __future__ import annotations

import copy
import importlib
import pkgutil
from dataclasses import dataclass
from types import ModuleType


@dataclass(frozen=True)
class Properties:
    """The properties to check, in order, and the result fields they own."""
    modules: tuple[ModuleType, ...]

    def __iter__(self):
        return iter(self.modules)

    @property
    def names(self) -> list[str]:
        return [name(p) for p in self.modules]

    def fields(self) -> dict:
        """Every property's fields with their values for a run that could not be checked, in
        property order (fresh copies: a result may change them)."""
        return {k: copy.deepcopy(v) for p in self.modules for k, v in p.FIELDS.items()}

    def certainty(self) -> dict[str, str]:
        """The certainty entries of a run that could not be checked: all unknown."""
        return {k: "unknown" for p in self.modules for k in getattr(p, "CERTAINTY", ())}

    def schema(self, field: str) -> dict | None:
        """The JSON Schema its owner declares for `field` (`SCHEMAS`), if any."""
        return next((p.SCHEMAS[field] for p in self.modules if field in getattr(p, "SCHEMAS", {})), None)

    def owner(self, field: str) -> str | None:
        return next((name(p) for p in self.modules if field in p.FIELDS), None)

    def plus(self, *more: ModuleType) -> "Properties":
        """These properties and `more` (modules, or objects with the same names), in order."""
        return registry(self.modules + more)


def name(prop) -> str:
    return getattr(prop, "NAME", None) or prop.__name__.rsplit(".", 1)[-1]


def registry(modules) -> Properties:
    """`modules` in `ORDER`; refuses two properties that own the same field."""
    for p in modules:
        missing = [attr for attr in ("ORDER", "FIELDS", "check") if not hasattr(p, attr)]
        if missing:
            raise RuntimeError(f"property {name(p)} does not declare {', '.join(missing)}")
    ordered = tuple(sorted(modules, key=lambda p: (p.ORDER, name(p))))
    owners: dict[str, str] = {}
    for p in ordered:
        for field in p.FIELDS:
            if field in owners:
                raise RuntimeError(f"properties {owners[field]} and {name(p)} both own the field {field!r}")
            owners[field] = name(p)
    return Properties(ordered)


def _discover() -> list[ModuleType]:
    found = [importlib.import_module(f"{__name__}.{info.name}") for info in pkgutil.iter_modules(__path__)]
    return [m for m in found if hasattr(m, "check")]


PROPERTIES = registry(_discover())

__all__ = ["PROPERTIES", "Properties", "registry", "name"]
