"""Every reader of a run directory or a scenario file, fed damaged and made-up input.

Real, valid files (a saved failing run with faults, the repository's scenarios) are mutated the
way disks, editors and half-copies damage them — truncated, bytes flipped, lines dropped,
duplicated or swapped, a value replaced by one of the wrong type, a huge number, unicode — and
also generated from scratch. Whatever the input, ``leasecheck check``, ``leasecheck report``,
``leasecheck shrink`` and ``leasecheck run --replay`` / ``--scenario`` (read and preflighted, in
process) give a verdict or a one-line error, never a traceback; a file that is not JSON, UTF-8
or TOML is named with its line.
"""
from __future__ import annotations

import json
import re
import shutil
import tempfile
import tomllib
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings, strategies as st

from leasecheck.checkers.errors import CheckError
from leasecheck.harness.api import shrink_plan
from leasecheck.harness.cli import EXIT_USAGE, cli
from leasecheck.harness.errors import UsageError
from leasecheck.harness.run.preflight import preflight
from leasecheck.harness.settings.keywords import config_from

pytestmark = pytest.mark.slow   # hypothesis feeds every reader damaged runs, seconds each: not in the fast subset

ROOT = Path(__file__).resolve().parents[2]
RUN = ROOT / "tests" / "harness" / "data" / "fuzz-run"            # a real failing run: pause:holder, naive-del
KILLED = ROOT / "tests" / "checkers" / "data" / "killed-run"        # history.d/ only
SCENARIOS = sorted((ROOT / "scenarios").glob("*.toml"))

FUZZ = settings(max_examples=40, deadline=None, database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

ODD_VALUES = [b"null", b"true", b"-1", b"0", b"1e400", b"-1e400", b"99999999999999999999999999",
              b"[]", b"{}", b'"x"', b'"\xe2\x98\x83\xf0\x9f\x94\x92"', b'"\\ud800"', b"[[[[[[]]]]]]",
              b'{"time": "soon"}', b"NaN", b"Infinity"]


@st.composite
def damaged(draw, data: bytes) -> bytes:
    """``data`` after one to three of the damages a file meets."""
    for _ in range(draw(st.integers(1, 3))):
        lines = data.split(b"\n")
        kind = draw(st.sampled_from(["truncate", "flip", "drop", "duplicate", "swap", "value", "insert",
                                     "unquote"]))
        i = draw(st.integers(0, max(0, len(lines) - 1)))
        if kind == "truncate":
            data = data[:draw(st.integers(0, len(data)))]
            continue
        if kind == "flip" and data:
            b = bytearray(data)
            for _ in range(draw(st.integers(1, 4))):
                b[draw(st.integers(0, len(b) - 1))] = draw(st.integers(0, 255))
            data = bytes(b)
            continue
        if kind == "drop":
            del lines[i]
        elif kind == "duplicate":
            lines.insert(i, lines[i])
        elif kind == "swap":
            j = draw(st.integers(0, len(lines) - 1))
            lines[i], lines[j] = lines[j], lines[i]
        elif kind == "value":        # a field's value becomes one of another type
            odd = draw(st.sampled_from(ODD_VALUES))
            nth = draw(st.integers(0, 3))
            hits = list(re.finditer(rb'(?<=: )("(?:[^"\\]|\\.)*"|-?\d+(?:\.\d+)?(?:e-?\d+)?|true|false|null)',
                                    lines[i]))
            if hits:
                m = hits[min(nth, len(hits) - 1)]
                lines[i] = lines[i][:m.start()] + odd + lines[i][m.end():]
        elif kind == "insert":
            lines.insert(i, draw(st.sampled_from(ODD_VALUES + [b"\xff\xfe", "é☃".encode(), b"", b"{"])))
        elif kind == "unquote":
            lines[i] = lines[i].replace(b'"', b"", 1)
        data = b"\n".join(lines)
    return data


made_up = st.one_of(
    st.binary(max_size=400),
    st.text(max_size=200).map(lambda t: t.encode("utf-8", "surrogatepass")),
    st.recursive(st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=10),
                 lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
                 max_leaves=12).map(lambda v: json.dumps(v).encode()))


def _copy(src: Path, tmp: str) -> Path:
    run_dir = Path(tmp) / "results" / "fuzz" / "run"
    shutil.copytree(src, run_dir)
    return run_dir


def _contents(name: str, source: Path):
    """A strategy for a file's new bytes: the real one damaged, or made up."""
    real = (source / name).read_bytes()
    return st.one_of(damaged(real), made_up) if name != "history.jsonl" else damaged(real)


def _one_line(text: str) -> bool:
    return len(text.strip().splitlines()) == 1


def _not_json(data: bytes) -> bool:
    try:
        json.loads(data.decode("utf-8"))
        return False
    except (UnicodeDecodeError, ValueError, RecursionError):
        return True


def _invoke(*args: str):
    r = CliRunner().invoke(cli, list(args))
    if r.exception is not None and not isinstance(r.exception, SystemExit):
        raise r.exception          # a traceback: the test fails with it
    assert "Traceback" not in r.output, r.output
    return r


def _judged(r) -> None:
    """A verdict (0, 1, 2) or a one-line usage error (64)."""
    assert r.exit_code in (0, 1, 2, EXIT_USAGE), r.output
    if r.exit_code == EXIT_USAGE:
        assert _one_line(r.stderr), r.stderr


# -- leasecheck check -----------------------------------------------------------------------------

@FUZZ
@given(st.data())
def test_check_judges_any_damaged_run(data):
    name = data.draw(st.sampled_from(["history.jsonl", "audit.log", "config.json", "store-clock.jsonl",
                                      "schedule.json"]))
    new = data.draw(_contents(name, RUN))
    with tempfile.TemporaryDirectory() as tmp:
        run_dir = _copy(RUN, tmp)
        (run_dir / name).write_bytes(new)
        r = _invoke("check", str(run_dir))
        _judged(r)
        if r.exit_code != EXIT_USAGE:
            assert json.loads((run_dir / "results.json").read_text())["valid"] in (True, False, "unknown")


@FUZZ
@given(st.data())
def test_check_judges_a_damaged_killed_run(data):
    part = data.draw(st.sampled_from(sorted(p.name for p in (KILLED / "history.d").iterdir())))
    new = data.draw(damaged((KILLED / "history.d" / part).read_bytes()))
    with tempfile.TemporaryDirectory() as tmp:
        run_dir = _copy(KILLED, tmp)
        (run_dir / "history.d" / part).write_bytes(new)
        r = _invoke("check", str(run_dir))
        _judged(r)
        if r.exit_code != EXIT_USAGE:
            assert json.loads((run_dir / "results.json").read_text())["valid"] is not True  # cut short


def test_check_names_a_malformed_history_line():
    with tempfile.TemporaryDirectory() as tmp:
        run_dir = _copy(RUN, tmp)
        path = run_dir / "history.jsonl"
        lines = path.read_bytes().split(b"\n")
        lines[5] = lines[5][:30]
        path.write_bytes(b"\n".join(lines))
        r = _invoke("check", str(run_dir))
        _judged(r)
        assert "history.jsonl:6: malformed line" in r.output, r.output


def test_check_names_a_malformed_audit_line():
    with tempfile.TemporaryDirectory() as tmp:
        run_dir = _copy(RUN, tmp)
        path = run_dir / "audit.log"
        lines = path.read_bytes().split(b"\n")
        lines[9] = b"\xff\xfe garbage \xe9"
        path.write_bytes(b"\n".join(lines))
        r = _invoke("check", str(run_dir))
        _judged(r)
        assert "audit.log:10:" in r.output, r.output


# -- leasecheck report ----------------------------------------------------------------------------

@FUZZ
@given(st.data())
def test_report_draws_any_damaged_run(data):
    name = data.draw(st.sampled_from(["results.json", "witness.json", "history.jsonl", "config.json"]))
    new = data.draw(_contents(name, RUN))
    with tempfile.TemporaryDirectory() as tmp:
        run_dir = _copy(RUN, tmp)
        (run_dir / name).write_bytes(new)
        r = _invoke("report", str(run_dir))
        assert r.exit_code in (0, EXIT_USAGE, 255), r.output
        if r.exit_code:
            assert _one_line(r.stderr), r.stderr


# -- leasecheck run --replay ----------------------------------------------------------------------

@FUZZ
@given(st.data())
def test_replay_reads_any_damaged_config_or_schedule(data):
    name = data.draw(st.sampled_from(["config.json", "schedule.json"]))
    new = data.draw(_contents(name, RUN))
    with tempfile.TemporaryDirectory() as tmp:
        run_dir = _copy(RUN, tmp)
        (run_dir / name).write_bytes(new)
        try:
            cfg, said = config_from({}, replay=run_dir)
            preflight(cfg, schedule_from=f"--replay {run_dir}", given=said)
        except UsageError as e:
            assert _one_line(str(e)), str(e)
            if _not_json(new):
                assert re.search(rf"{re.escape(name)}:\d+: not (JSON|UTF-8)", str(e)), str(e)
        else:
            assert not _not_json(new)


def test_replay_names_the_line_of_a_wrong_value():
    with tempfile.TemporaryDirectory() as tmp:
        run_dir = _copy(RUN, tmp)
        path = run_dir / "config.json"
        path.write_text(path.read_text().replace('"workers": 3', '"workers": "three"'))
        line = next(n for n, t in enumerate(path.read_text().splitlines(), 1) if '"workers"' in t)
        r = _invoke("run", "--replay", str(run_dir))
        assert r.exit_code == EXIT_USAGE and _one_line(r.stderr), r.output
        assert f"config.json:{line}: workers must be a number, not 'three'" in r.stderr, r.stderr


def test_replay_and_scenario_name_the_line_of_a_byte_that_is_not_utf8():
    with tempfile.TemporaryDirectory() as tmp:
        run_dir = _copy(RUN, tmp)
        path = run_dir / "config.json"
        lines = path.read_bytes().splitlines(keepends=True)
        lines[2] = lines[2].replace(b'"', b'"\xff', 1)
        path.write_bytes(b"".join(lines))
        with pytest.raises(UsageError) as e:
            config_from({}, replay=run_dir)
        assert f"{path}:3: not UTF-8 (byte 0xff); restore the file" in str(e.value), str(e.value)
        scenario = Path(tmp) / "s.toml"
        scenario.write_bytes(SCENARIOS[0].read_bytes().replace(b"\n", b"\n\xfe", 1))
        with pytest.raises(UsageError) as e:
            config_from({}, scenario=scenario)
        assert str(e.value) == f"{scenario}:2: not UTF-8 (byte 0xfe); a scenario file is UTF-8 text"


# -- leasecheck run --scenario --------------------------------------------------------------------

@FUZZ
@given(st.data())
def test_scenario_reads_any_damaged_file(data):
    source = data.draw(st.sampled_from(SCENARIOS))
    new = data.draw(st.one_of(damaged(source.read_bytes()), made_up))
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / source.name
        path.write_bytes(new)
        try:
            cfg, said = config_from({}, scenario=path)
            preflight(cfg, schedule_from=str(path), given=said)
        except UsageError as e:
            assert _one_line(str(e)), str(e)
            try:
                tomllib.loads(new.decode("utf-8"))
            except (UnicodeDecodeError, tomllib.TOMLDecodeError):
                assert re.search(rf"{re.escape(source.name)}:\d+: not (valid TOML|UTF-8)", str(e)), str(e)


# -- leasecheck shrink ----------------------------------------------------------------------------

@FUZZ
@given(st.data())
def test_shrink_reads_any_damaged_run(data):
    name = data.draw(st.sampled_from(["config.json", "schedule.json", "history.jsonl", "results.json"]))
    new = data.draw(_contents(name, RUN))
    with tempfile.TemporaryDirectory() as tmp:
        run_dir = _copy(RUN, tmp)
        (run_dir / name).write_bytes(new)
        try:
            shrunk = shrink_plan(run_dir, budget="1m")
        except (UsageError, CheckError) as e:
            assert _one_line(str(e)), str(e)
            if name != "history.jsonl" and name != "results.json" and _not_json(new):
                assert re.search(rf"{re.escape(name)}:\d+: not (JSON|UTF-8)", str(e)), str(e)
        else:
            assert shrunk.recorded.violated       # only a failing run is shrunk
