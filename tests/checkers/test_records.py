"""The check reads a history's common lines as typed records' tuples (`checkers/read/records.py`)
and every other line as a dict: both readings must say the same, line by line and as a verdict, also
on lines the records do not fit (odd types, missing and unknown fields, job events that name a
call, damage)."""
import json
import shutil
from pathlib import Path

import pytest

from leasecheck.checkers import check_run
from leasecheck.checkers.read.digest import Digest
from leasecheck.checkers.read.history import HistoryStream
from leasecheck.checkers.read.records import (INDEX, KIND, ROW, UNSET, Effect, Fail, Invoke, JobEnd, JobStart, Ok,
                                              decode, row)
from tests.checkers.test_streaming import in_memory

DATA = Path(__file__).parent / "data"


def _odd(lines: list[str]) -> list[str]:
    """The lines with the shapes the records must not misread."""
    out = []
    for i, raw in enumerate(lines):
        e = json.loads(raw)
        kind = e.get("type")
        if i % 3 == 1:
            e.pop("index", None)                 # the reader numbers it
        if i % 4 == 2:
            e["zzz"] = {"unknown": [1, 2]}       # a field no record keeps
        if kind == "ok" and e.get("f") == "acquire" and i % 5 == 0:
            e["fence"] = None
            e.pop("sent", None)                  # a completion without its commands
        if kind == "job_end" and i % 2:
            e["aborted"] = None
        if kind == "effect":
            e.pop("process", None)
        out.append(json.dumps(e))
    # lines that are read as dicts: a job event that names a call, a call whose name is null, a
    # time that is not an integer, a completion of unknown outcome, damage
    first_job = next(json.loads(x) for x in lines if json.loads(x).get("type") == "job_start")
    t = first_job["time"]
    out.append(json.dumps({"time": t, "process": "w9.s0", "type": "job_start", "f": "acquire",
                           "attempt": "w9.s0.0", "key": first_job["key"]}))
    out.append(json.dumps({"time": t, "process": "w9.s0", "type": "job_end", "f": None, "attempt": "w9.s0.0",
                           "key": first_job["key"], "aborted": False}))
    out.append(json.dumps({"time": t, "process": "w9.s0", "type": "ok", "f": None, "attempt": "w9.s0.1"}))
    out.append(json.dumps({"time": t, "process": "w9.s0", "type": "invoke", "f": "frobnicate", "attempt": "w9.s0.5"}))
    out.append(json.dumps({"time": t, "process": "w9.s0", "type": "ok", "f": "frobnicate", "attempt": "w9.s0.5",
                           "sent": [["w9.s0.c0", 0, "PING"]]}))
    out.append(json.dumps({"time": t, "process": "w9.s0", "type": "ok", "f": "acquire", "attempt": "w9.s0.6",
                           "sent": [["w9.s0.c0", 1, "SET", 1], ["w9.s0.c1", None, "SET"]]}))
    out.append(json.dumps({"time": True, "process": "w9.s0", "type": "ok", "f": "acquire", "attempt": "w9.s0.2"}))
    out.append(json.dumps({"time": t + 0.5, "process": "w9.s0", "type": "invoke", "f": "acquire", "attempt": "w9.s0.3"}))
    out.append('{"time": 5, "type": "invoke", "f": "acqu')
    out.append(json.dumps({"time": t, "process": "w9.s0", "type": "info", "f": "release", "attempt": "w9.s0.4",
                           "error": "TimeoutError"}))
    # (in time order again, as the reader expects; the odd ones land where their time says)
    def when(x):
        try:
            v = json.loads(x).get("time")
        except ValueError:
            return 0
        return v if isinstance(v, int) and not isinstance(v, bool) else 0
    return sorted(out, key=when)


def test_a_typed_record_answers_as_the_events_dict_for_every_field_it_keeps(tmp_path):
    run = tmp_path / "run"
    shutil.copytree(DATA / "incident-token-cas-ok", run)
    history = run / "history.jsonl"
    history.write_text("\n".join(_odd(history.read_text().splitlines())) + "\n")
    dicts, records = list(HistoryStream(run)), list(HistoryStream(run).records())
    assert len(dicts) == len(records) >= 20
    typed = 0
    classes = {c.kind: c for c in (Invoke, Ok, Fail, JobStart, JobEnd, Effect)}
    for d, r in zip(dicts, records):
        if isinstance(r, dict):
            assert r == d
            continue
        typed += 1
        assert type(r) is tuple and len(r) == len(ROW) and r[KIND] == d["type"]
        kept = classes[r[KIND]].__struct_fields__
        for i, name in enumerate(ROW[1:], 1):
            got = r[i]
            if name not in kept:
                assert got is UNSET, (name, d, r)
                continue
            if name == "sent" and isinstance(got, list):      # (entries as tuples)
                assert all(type(x) is tuple for x in got)
                got = [list(x) for x in got]
            assert (got if got is not UNSET else "absent") == d.get(name, "absent"), (name, d, r)
    assert typed >= len(dicts) - 10
    kinds = {r[KIND] if type(r) is tuple else dict for r in records}
    assert {"invoke", "ok", "fail", "job_start", "job_end", dict} <= kinds
    assert [r for r in records if isinstance(r, dict) and r.get("type") == "job_start"], \
        "a job event that names a call is read as a dict"
    assert all(r[INDEX] is not UNSET for r in records if type(r) is tuple)
    assert "frobnicate" in {r["f"] for r in records if isinstance(r, dict) and r.get("type") in ("invoke", "ok")}, \
        "a call of another name is read as a dict"
    replied = [r for r in records if type(r) is tuple and r[KIND] == "ok" and r[ROW.index("attempt")] == "w9.s0.6"]
    assert replied and replied[0][ROW.index("sent")] == [("w9.s0.c0", 1, "SET", 1), ("w9.s0.c1", None, "SET")], \
        "a recorded reply and a null number stay in the record's entries"
    from leasecheck.events import CALLS, INVOKE, JOB_START
    assert all(any(r[ROW.index("f")] is c for c in CALLS) for r in records if type(r) is tuple and r[KIND] in
               ("invoke", "ok", "fail"))
    assert all(any(r[KIND] is k for k in (INVOKE, "ok", "fail", JOB_START, "job_end", "effect"))
               for r in records if type(r) is tuple), "the kind is the constant of leasecheck.events itself"
    assert HistoryStream(run).records().stream is not None


def test_a_typed_record_is_read_as_its_tuple():
    line = (b'{"time":5,"process":"w1.s0","type":"ok","f":"acquire","attempt":"w1.s0.0","key":"k","value":true,'
            b'"sent":[["w1.s0.c0",0,"SET",1]],"index":7}')
    r = decode(line)
    assert isinstance(r, Ok)
    assert row(r) == ("ok", 5, 7, "w1.s0", "w1.s0.0", "k", "acquire", True, [("w1.s0.c0", 0, "SET", 1)], UNSET, UNSET)


@pytest.mark.parametrize("name", ["incident-token-cas-ok", "incident-plain-del-bad", "renew-shortens-foreign-bad",
                                  "evicted-info-create-bad", "client-retry"])
def test_the_check_of_odd_lines_read_as_records_equals_the_check_of_the_same_lines_as_dicts(name, tmp_path):
    run = tmp_path / name
    shutil.copytree(DATA / name, run)
    history = run / "history.jsonl"
    history.write_text("\n".join(_odd(history.read_text().splitlines())) + "\n")
    streamed, loaded = check_run(run), in_memory(run)
    assert "could not check" not in " ".join(streamed["reasons"])
    assert any("malformed line skipped" in p for p in streamed["problems"])
    assert streamed == loaded


def test_the_digest_of_records_equals_the_digest_of_dicts():
    run = DATA / "renew-shortens-foreign-bad"
    a, b = Digest().consume(HistoryStream(run)), Digest().consume(HistoryStream(run).records())
    assert (a.count, a.start, a.end, a.completed) == (b.count, b.start, b.end, b.completed)
    assert a.hazards.counts == b.hazards.counts and a.hazards.calls == b.hazards.calls
    assert a.problems == b.problems and a.effects == b.effects
    assert {k: (r.start, r.end, r.aborted) for k, r in a.jobs.runs.items()} == \
        {k: (r.start, r.end, r.aborted) for k, r in b.jobs.runs.items()}
    assert a.exceptions.calls == b.exceptions.calls
