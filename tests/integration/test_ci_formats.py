"""What a CI job reads: `--junit` XML (one test case per checked property) and a log that is not
wrapped at 80 columns."""
from __future__ import annotations

import os
import subprocess
import sys
import xml.etree.ElementTree as ET

import pytest

from leasecheck.checkers.properties import PROPERTIES
from tests.conftest import ROOT

pytestmark = pytest.mark.integration

# The properties of a single-store run (one whose `applies` says no, as mutual exclusion across
# several masters, has no case there).
NAMES = [name for name, prop in zip(PROPERTIES.names, PROPERTIES) if not hasattr(prop, "applies")]
SHORT = ("--workers", "3", "--time-limit", "2s", "--seed", "7")


def _suite(path):
    root = ET.parse(path).getroot()
    assert root.tag == "testsuites"
    suites = root.findall("testsuite")
    assert len(suites) == 1
    suite = suites[0]
    cases = suite.findall("testcase")
    assert [c.get("name") for c in cases] == NAMES
    kinds = {name: getattr(prop, "KIND", "safety") for name, prop in zip(PROPERTIES.names, PROPERTIES)}
    assert [c.get("classname") for c in cases] == [f"{suite.get('name')}.{kinds[n]}" for n in NAMES]
    assert {p.get("name") for p in suite.find("properties")} >= {"valid", "safety", "liveness"}
    assert int(suite.get("tests")) == len(cases) == int(root.get("tests"))
    failed = [c for c in cases if c.find("failure") is not None]
    errored = [c for c in cases if c.find("error") is not None]
    assert int(suite.get("failures")) == len(failed) and int(suite.get("errors")) == len(errored)
    return suite, {c.get("name"): c for c in cases}


def test_junit_of_a_valid_run_passes_every_property(leasecheck, tmp_path):
    r = leasecheck("run", "--lease", "token-cas", *SHORT, "--junit", str(tmp_path / "j.xml"))
    assert r.code == 0, r.out + r.err
    suite, cases = _suite(tmp_path / "j.xml")
    assert suite.get("failures") == "0" and suite.get("errors") == "0"
    assert suite.get("name") == "leasecheck.token-cas"
    assert "no foreign release" in cases["foreign_releases"].findtext("system-out")
    # the run keeps its history once: the merged file, not the per-process parts as well
    assert (r.run_dir / "history.jsonl").stat().st_size > 0 and not (r.run_dir / "history.d").exists()


def test_junit_of_a_violation_carries_the_witness_and_check_writes_it_too(leasecheck, tmp_path):
    r = leasecheck("run", "--lease", "naive-del", "--ttl", "300ms", "--job-duration", "600ms",
                   *SHORT, "--junit", str(tmp_path / "run.xml"))
    assert r.code == 1, r.out + r.err
    suite, cases = _suite(tmp_path / "run.xml")
    failure = cases["foreign_releases"].find("failure")
    assert failure is not None and "foreign release" in failure.get("message")
    assert "| Time (s) |" in failure.text            # the witness timeline, as Markdown
    assert r.results["valid"] is False

    # `check` on the stored run writes the same cases, from a shell without COLUMNS and piped:
    # a witness row stays on one line.
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    p = subprocess.run([sys.executable, "-m", "leasecheck", "check", str(r.run_dir), "--junit",
                        str(tmp_path / "check.xml")], capture_output=True, text=True, cwd=ROOT,
                       env=env, timeout=120)
    assert p.returncode == 1, p.stdout + p.stderr
    _, again = _suite(tmp_path / "check.xml")
    assert {n for n, c in again.items() if c.find("failure") is not None} == \
           {n for n, c in cases.items() if c.find("failure") is not None}
    rows = [line for line in (r.run_dir / "witness.md").read_text().splitlines() if line.startswith("| ")]
    assert rows and all(row in p.stdout.splitlines() for row in rows), p.stdout
    assert max(len(line) for line in rows) > 80   # the case the wrapping used to break


def test_junit_of_an_inconclusive_run_reports_errors_not_passes(leasecheck, tmp_path):
    r = leasecheck("run", "--lease", "token-cas", "--no-audit", *SHORT, "--junit", str(tmp_path / "j.xml"))
    assert r.code == 2, r.out + r.err
    suite, cases = _suite(tmp_path / "j.xml")
    error = cases["foreign_releases"].find("error")
    assert error is not None and error.get("type") == "inconclusive" and "audit" in error.text
    assert suite.get("failures") == "0"
