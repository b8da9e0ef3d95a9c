"""The JSON Schemas of the run directory's data, generated from the code that writes it:
``results.json`` from `result.Result` and the properties' fields (`properties.PROPERTIES`), a
history line from `leasecheck.events.EVENTS`. ``docs/schemas/`` holds them as files;
``python -m leasecheck.checkers.schema docs/schemas`` writes them again, and a test fails when
the files and the code differ.
"""
from __future__ import annotations

import json
import sys
import types
import typing
from dataclasses import fields
from pathlib import Path

from leasecheck.checkers.properties import PROPERTIES
from leasecheck.checkers.result import OMITTED, Result
from leasecheck.events import event_schema

RESULTS_SCHEMA = "results.schema.json"
EVENT_SCHEMA = "history-event.schema.json"
RESULTS_ID = "https://github.com/leasecheck/leasecheck/docs/schemas/results.schema.json"

_VALID = {"enum": [True, False, "unknown"], "description": "the verdict: true, false, or \"unknown\""}


def _of_annotation(tp) -> dict:
    """The schema of a `Result` field's type."""
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if tp is int:
        return {"type": "integer"}
    if tp is float:
        return {"type": "number"}
    if tp is str:
        return {"type": "string"}
    if tp is dict or origin is dict:
        values = {"additionalProperties": _of_annotation(args[1])} if args and args[1] is not typing.Any else {}
        return {"type": "object", **values}
    if tp is list or origin is list:
        return {"type": "array", **({"items": _of_annotation(args[0])} if args else {})}
    if origin in (typing.Union, types.UnionType):
        kinds = [_of_annotation(a) for a in args]
        if all(set(k) == {"type"} for k in kinds):
            return {"type": [k["type"] for k in kinds]}
        return {"anyOf": kinds}
    if tp is type(None):
        return {"type": "null"}
    return {}


def _of_default(value) -> dict:
    """The schema of a property's field, from its value for a run not checked (None: any)."""
    for kind, name in ((bool, "boolean"), (int, "integer"), (float, "number"), (str, "string"),
                       (list, "array"), (dict, "object")):
        if isinstance(value, kind):
            return {"type": name}
    return {}


def results_schema() -> dict:
    """The JSON Schema of ``results.json``: `Result`'s fields (the verdict, what was measured of
    the run) and the fields the properties own; a field left out (`OMITTED`) is not required."""
    hints = typing.get_type_hints(Result)
    props: dict[str, dict] = {}
    required: list[str] = []
    for f in fields(Result):
        if f.name == "properties":
            owned = PROPERTIES.fields()
            for name, value in owned.items():
                declared = PROPERTIES.schema(name) or _of_default(value)
                props[name] = {**declared, "description": f"owned by the property {PROPERTIES.owner(name)}"}
                if value is not OMITTED:
                    required.append(name)
            continue
        props[f.name] = _VALID if f.name == "valid" else _of_annotation(hints[f.name])
        required.append(f.name)
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": RESULTS_ID,
        "title": "leasecheck results.json",
        "description": "The verdict of one run and the numbers behind it (docs/history.md; "
                       "leasecheck.checkers.result.Result).",
        "type": "object",
        "required": sorted(required),
        "properties": props,
    }


def schemas() -> dict[str, dict]:
    """File name -> schema, for ``docs/schemas/``."""
    return {RESULTS_SCHEMA: results_schema(), EVENT_SCHEMA: event_schema()}


def dump(schema: dict) -> str:
    return json.dumps(schema, indent=2) + "\n"


def write(folder: Path) -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    out = []
    for name, schema in schemas().items():
        (folder / name).write_text(dump(schema))
        out.append(folder / name)
    return out


if __name__ == "__main__":   # python -m leasecheck.checkers.schema docs/schemas
    for path in write(Path(sys.argv[1] if len(sys.argv) > 1 else "docs/schemas")):
        print(path)
