"""Properties compose: each judges its part with its own validity, the verdict merges them (False
beats "unknown" beats True) into one result schema, on the normal and the failed path alike;
adding a property is one module (`ORDER`, `FIELDS`, `check(m, found) -> Part`)."""
import types
from pathlib import Path

import pytest

from leasecheck.checkers import check, check_run
from leasecheck.checkers.read.history import HistoryStream
from leasecheck.checkers.measures.measure import measure
from leasecheck.checkers.read.audit import open_audit
from leasecheck.checkers.properties import PROPERTIES, evidence, foreign_releases, registry, token_reuse
from leasecheck.checkers.result import OMITTED, Part, Result, merge_validity
from leasecheck.checkers.read.rundir import load_config, load_store_clock
from leasecheck.checkers.verdict import failed

DATA = Path(__file__).parent / "data"


def measured(name: str, audit: bool = True):
    run = DATA / name
    history = HistoryStream(run)
    config, _ = load_config(run, lambda: history.scan(b"run_start")[:1])
    samples, _ = load_store_clock(run)
    return measure(history, open_audit(run) if audit else None, config, samples)


def test_false_beats_unknown_beats_true():
    ok, doubt, bad = Part(), Part(doubts=["d"]), Part(failures=["f"])
    assert (ok.valid, doubt.valid, bad.valid) == (True, "unknown", False)
    assert merge_validity([]) is True and merge_validity([ok, ok]) is True
    assert merge_validity([ok, doubt, ok]) == "unknown"
    assert merge_validity([doubt, bad, ok]) is False and merge_validity([bad, doubt]) is False


def test_merged_reasons_are_failures_then_doubts_in_property_order_and_notes_only_when_true():
    parts = [Part(doubts=["d1"], notes=["n1"]), Part(failures=["f2"], doubts=["d2"]), Part(failures=["f3"])]
    r = Result.merged(1, parts)
    assert r.valid is False and r.reasons == ["f2", "f3", "d1", "d2"]
    r = Result.merged(1, [Part(notes=["n1"]), Part(), Part(notes=["n3"])])
    assert r.valid is True and r.reasons == ["n1", "n3"]


def test_witnesses_of_several_properties_are_joined_in_property_order():
    r = Result.merged(1, [Part(witness=[{"kind": "foreign_release", "markdown": "A", "rows": []}]),
                          Part(), Part(witness=[{"kind": "early_loss", "markdown": "B"}])])
    assert r.witness == {"kind": "foreign_release", "markdown": "A\nB", "rows": []}


def test_a_property_cannot_write_a_field_outside_the_schema():
    with pytest.raises(KeyError, match="bogus"):
        Result.merged(1, [Part({"bogus": 1})])


def test_each_property_judges_alone_with_its_own_validity():
    bad, ok = measured("incident-plain-del-bad"), measured("incident-token-cas-ok")
    assert foreign_releases.check(bad, {}).valid is False
    assert foreign_releases.check(ok, {}).valid is True
    assert token_reuse.check(measured("fixed-token-bad"), {}).valid is False
    assert token_reuse.check(ok, {}).valid is True
    assert evidence.check(ok, {}).fields["claims_seen"]["count"] > 0
    history_only = foreign_releases.check(measured("incident-token-cas-ok", audit=False), {})
    assert history_only.valid == "unknown" and history_only.certainty == {"foreign_releases": "unknown"}


@pytest.mark.parametrize("name", ["incident-plain-del-bad", "incident-token-cas-ok", "killed-run", "fixed-token-bad"])
def test_the_verdict_is_the_merge_of_the_parts(name):
    m = measured(name)
    found, parts = {}, []
    for prop in PROPERTIES:
        parts.append(prop.check(m, found))
        found.update(parts[-1].fields)
    r = check_run(DATA / name)
    assert r["valid"] == merge_validity(parts)
    assert r["reasons"] == Result.merged(1, parts, PROPERTIES.fields()).reasons


def _property(name: str, check, order: int = 200, fields: dict | None = None):
    """A property module as a new file in checkers/properties/ would be."""
    mod = types.ModuleType(f"leasecheck.checkers.properties.{name}")
    mod.ORDER, mod.FIELDS, mod.check = order, fields or {}, check
    return mod


def _check_with(run: Path, properties):
    history = HistoryStream(run)
    config, _ = load_config(run, lambda: history.scan(b"run_start")[:1])
    samples, _ = load_store_clock(run)
    return check(HistoryStream(run), open_audit(run), config, samples, properties=properties)


def test_adding_a_property_is_one_module():
    """A new property composes without touching the others: a violation makes the run invalid,
    a doubt makes a valid run unknown, its reason is listed, and the fields it declares appear
    in results.json on the checked and the failed path."""
    run = DATA / "incident-token-cas-ok"
    base = check_run(run)
    assert base["valid"] is True

    def no_release_found_nothing(m, found):
        n = m.digest.releases.found_nothing
        return Part({"found_nothing_seen": n}, failures=[f"{n} release(s) found nothing"] if n else [])

    def always_doubtful(m, found):
        return Part(doubts=["cannot tell"])

    strict = _property("strict_releases", no_release_found_nothing, fields={"found_nothing_seen": None})
    r = _check_with(run, PROPERTIES.plus(strict))
    assert r["valid"] is False and r["reasons"] == ["1 release(s) found nothing"]
    assert r["found_nothing_seen"] == 1
    assert failed("x", PROPERTIES.plus(strict))["found_nothing_seen"] is None
    r = _check_with(run, PROPERTIES.plus(_property("doubtful", always_doubtful)))
    assert r["valid"] == "unknown" and r["reasons"] == ["cannot tell"]
    assert r["safety"] == {"valid": "unknown", "reasons": ["cannot tell"]}    # a property is safety's by default
    assert r["liveness"] == base["liveness"]
    assert {k: v for k, v in r.items() if k not in ("valid", "reasons", "safety")} == \
        {k: v for k, v in base.items() if k not in ("valid", "reasons", "safety")}


def test_the_order_of_properties_is_their_declared_order():
    first = _property("first", lambda m, found: Part(failures=["first"]), order=1)
    last = _property("last", lambda m, found: Part(failures=["last"]), order=999)
    r = _check_with(DATA / "incident-plain-del-bad", PROPERTIES.plus(last, first))
    assert r["reasons"][0] == "first" and r["reasons"][-1] == "last"


def test_a_property_writes_only_its_own_fields():
    thief = _property("thief", lambda m, found: Part({"foreign_releases": 0}))
    with pytest.raises(KeyError, match="thief wrote fields it does not own .*foreign_releases belongs to foreign_releases"):
        _check_with(DATA / "incident-token-cas-ok", PROPERTIES.plus(thief))
    twin = _property("twin", lambda m, found: Part(), fields={"overlap": None})
    with pytest.raises(RuntimeError, match="overlap and twin both own the field 'overlap'"):
        PROPERTIES.plus(twin)
    with pytest.raises(RuntimeError, match="does not declare ORDER"):
        registry([types.ModuleType("leasecheck.checkers.properties.bare")])


def test_every_module_of_the_package_is_a_property():
    package = Path(__file__).resolve().parents[2] / "checkers" / "properties"
    modules = sorted(p.stem for p in package.glob("*.py") if p.stem != "__init__")
    assert sorted(PROPERTIES.names) == modules


def test_the_failed_path_has_the_same_schema_as_the_checked_path(tmp_path):
    checked = check_run(DATA / "incident-token-cas-ok")
    broken = check_run(tmp_path / "nothing-here")
    assert broken == failed(broken["reasons"][0]) and broken["valid"] == "unknown"
    assert list(broken) == list(checked)                     # same keys, same order
    assert set(broken["certainty"]) == set(checked["certainty"])
    assert set(broken["overlap"]) == set(checked["overlap"])
    owned = [k for k, v in PROPERTIES.fields().items() if v is not OMITTED]
    assert list(checked) == ["schema_version", "valid", "reasons", "safety", "liveness", "warnings"] + owned + \
        ["ops", "duration_s", "audit", "disagreements", "problems", "witness", "certainty", "failure_of"]
