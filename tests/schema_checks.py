"""Check a run directory against the published JSON Schemas (docs/schemas/): every history line
against the event schema, a verdict against the results schema. Shared by the unit tests on saved
runs (tests/checkers/test_schemas.py) and the fresh run's (tests/integration/test_schemas_run.py)."""
from __future__ import annotations

import json
from pathlib import Path

from jsonschema import Draft202012Validator

from leasecheck.checkers.read.history import HistoryStream
from leasecheck.checkers.schema import EVENT_SCHEMA, RESULTS_SCHEMA
from leasecheck.events import parse_event
from leasecheck.rundir import HISTORY, HISTORY_PARTS, PART_SUFFIX

SCHEMAS = Path(__file__).resolve().parents[1] / "docs" / "schemas"


def validator(name: str) -> Draft202012Validator:
    schema = json.loads((SCHEMAS / name).read_text())
    Draft202012Validator.check_schema(schema)
    return Draft202012Validator(schema)


def history_files(run: Path) -> list[Path]:
    return ([run / HISTORY] if (run / HISTORY).is_file() else []) + sorted((run / HISTORY_PARTS).glob("*" + PART_SUFFIX))


def assert_history_valid(run: Path) -> int:
    """Every line of the run's history files satisfies the event schema (damage the reader reports
    and skips — a killed run's torn last line, a malformed line — excepted); returns how many
    were checked."""
    check, n = validator(EVENT_SCHEMA), 0
    stream = HistoryStream(run)
    list(stream)
    reported = {p.split(": ", 1)[0] for p in stream.problems}
    for path in history_files(run):
        lines = path.read_bytes().splitlines()
        for i, line in enumerate(lines, 1):
            if not line.strip():
                continue
            try:
                event = parse_event(line)
            except ValueError:
                assert f"{path.relative_to(run).as_posix()}:{i}" in reported, f"{path}:{i}: not an event"
                continue
            errors = [e.message for e in check.iter_errors(event)]
            assert not errors, f"{path}:{i}: {errors}"
            n += 1
    return n


def assert_results_valid(results: dict) -> None:
    errors = [f"{'/'.join(map(str, e.path))}: {e.message}" for e in validator(RESULTS_SCHEMA).iter_errors(results)]
    assert not errors, errors
