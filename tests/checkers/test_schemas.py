"""The published JSON Schemas (docs/schemas/) are the code's, and the saved run directories of the
tests' data satisfy them: every history line the event schema, every verdict the results schema."""
from __future__ import annotations

import json
import re
from dataclasses import fields
from pathlib import Path

import pytest
from schema_checks import SCHEMAS, assert_history_valid, assert_results_valid, validator

from leasecheck.checkers.properties import PROPERTIES
from leasecheck.checkers.result import Result
from leasecheck.checkers.schema import EVENT_SCHEMA, RESULTS_SCHEMA, dump, schemas
from leasecheck.checkers.verdict import check_run
from leasecheck.events import EVENTS

ROOT = Path(__file__).resolve().parents[2]
DATA = [Path(__file__).parent / "data", Path(__file__).parent / "replicated", Path(__file__).parent / "redlock"]
RUNS = sorted(p for d in DATA for p in d.iterdir() if p.is_dir())


def test_the_published_schemas_are_the_codes():
    for name, schema in schemas().items():
        assert (SCHEMAS / name).read_text() == dump(schema), \
            f"docs/schemas/{name} is stale: python -m leasecheck.checkers.schema docs/schemas"


def test_the_results_schema_has_every_field_of_result_and_no_other():
    props = set(json.loads((SCHEMAS / RESULTS_SCHEMA).read_text())["properties"])
    own = {f.name for f in fields(Result)} - {"properties"}
    assert props == own | set(PROPERTIES.fields())


def test_the_event_schema_and_the_docs_name_every_event_type():
    schema = json.loads((SCHEMAS / EVENT_SCHEMA).read_text())
    assert [r["if"]["properties"]["type"]["const"] for r in schema["allOf"]] == list(EVENTS)
    doc = (ROOT / "docs" / "history.md").read_text()
    table = set(re.findall(r"^\| `(\w+)`(?: / `(\w+)`)? \|", doc, re.M))
    listed = {t for pair in table for t in pair if t}
    assert set(EVENTS) <= listed
    for name in (RESULTS_SCHEMA, EVENT_SCHEMA):
        assert f"schemas/{name}" in doc


@pytest.mark.parametrize("run", RUNS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_saved_histories_satisfy_the_event_schema(run):
    assert assert_history_valid(run) > 0


@pytest.mark.parametrize("run", RUNS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_the_verdicts_of_saved_runs_satisfy_the_results_schema(run):
    assert_results_valid(check_run(run))


def test_the_schema_refuses_what_the_contract_does_not_allow():
    check = validator(EVENT_SCHEMA)
    good = {"time": 5, "process": "w0.s0", "type": "invoke", "f": "acquire", "attempt": "w0.s0.1", "key": "k"}
    assert check.is_valid(good)
    assert not check.is_valid({**good, "time": 1.5})
    assert not check.is_valid({k: v for k, v in good.items() if k != "key"})
    assert not check.is_valid({**good, "f": "steal"})
    assert check.is_valid({"time": 1, "process": "w0", "type": "from_a_later_writer"})   # skipped, not refused
    assert not validator(RESULTS_SCHEMA).is_valid({"valid": "maybe"})
