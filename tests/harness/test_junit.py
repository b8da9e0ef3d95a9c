"""The JUnit document itself, from parts built by hand: one case per property, failure / error /
pass as the property's validity says, and text a CI parser accepts."""
import xml.etree.ElementTree as ET

from leasecheck.checkers.result import Part
from leasecheck.harness.reports.junit import write_junit


def _parse(path):
    root = ET.parse(path).getroot()
    (suite,) = root.findall("testsuite")
    return suite, {c.get("name"): c for c in suite.findall("testcase")}


def test_each_validity_has_its_element(tmp_path):
    parts = [("foreign_releases", Part(failures=["1 foreign release(s)"],
                                       witness=[{"kind": "foreign_release", "markdown": "| Time (s) | A |\n|---|---|"}])),
             ("fates", Part(doubts=["a claim could not be followed \x01 to its end"])),
             ("overlap", Part(notes=["no overlap"]))]
    write_junit(tmp_path / "out" / "j.xml", {"valid": False, "duration_s": 2.5}, parts, "naive-del", tmp_path)
    suite, cases = _parse(tmp_path / "out" / "j.xml")
    assert (suite.get("tests"), suite.get("failures"), suite.get("errors")) == ("3", "1", "1")
    failure = cases["foreign_releases"].find("failure")
    assert failure.get("message") == "1 foreign release(s)" and failure.text.endswith("|---|---|")
    error = cases["fates"].find("error")
    assert error.get("type") == "inconclusive" and "\ufffd" in error.text      # control char replaced
    assert cases["overlap"].find("failure") is None and cases["overlap"].findtext("system-out") == "no overlap"
    assert not list(tmp_path.joinpath("out").glob("*.tmp"))


def test_a_run_that_was_not_checked_is_one_error(tmp_path):
    write_junit(tmp_path / "j.xml", {"valid": "unknown", "reasons": ["the harness failed: boom"]}, [],
                "token-cas", None)
    suite, cases = _parse(tmp_path / "j.xml")
    assert list(cases) == ["check"] and suite.get("errors") == "1"
    assert "boom" in cases["check"].find("error").get("message")
    assert [p.get("name") for p in suite.iter("property")] == ["valid"]
