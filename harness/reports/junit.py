"""A checked run as JUnit XML, the format CI systems read natively: one test case per checked
property (`leasecheck.checkers.properties`), so a CI page names which property failed and shows why.

- a property that held passes (its notes go to `system-out`);
- a violated one is a `<failure>`: the message is its first failure, the text every failure,
  then its witness timelines (Markdown);
- an inconclusive one is an `<error type="inconclusive">` with its doubts: the run exits 2, so
  the CI job is not green either, and "skipped" would hide that;
- a run the checker could not check at all is one `<error>` test case named `check`.

Each case's class is `leasecheck.<suite>.safety` or `leasecheck.<suite>.liveness` (its property's
kind), and the suite's properties carry both verdicts. Under `--liveness warn` a liveness
property that did not hold passes, its findings in `system-err` as a warning.
"""
from __future__ import annotations

import os
import xml.etree.ElementTree as ET
from pathlib import Path


def junit_xml(result: dict, parts: list, suite: str, run_dir: Path | None) -> ET.ElementTree:
    """The JUnit document of `result` and its `(name, Part)` pairs (`leasecheck.checkers.check_run(parts=…)`)."""
    tests = failures = errors = 0
    cases = []
    warn = (result.get("liveness") or {}).get("mode") == "warn"
    for name, part in parts or [("check", None)]:
        kind = getattr(part, "kind", "safety")
        case = ET.Element("testcase", classname=f"leasecheck.{suite}.{kind}", name=name, time="0")
        tests += 1
        if part is not None and kind == "liveness" and warn and part.valid is not True:
            # --liveness warn: a finding that does not fail the run, said where CI shows it
            ET.SubElement(case, "system-err").text = _clean("warning (--liveness warn): "
                                                            + "\n".join(part.failures + part.doubts))
        elif part is None:                         # the run could not be checked
            errors += 1
            _child(case, "error", "; ".join(result.get("reasons", [])) or "not checked", "not checked",
                   "\n".join(result.get("reasons", [])))
        elif part.valid is False:
            failures += 1
            text = "\n".join(part.failures + part.doubts)
            witness = "\n".join(w["markdown"] for w in part.witness if w.get("markdown"))
            _child(case, "failure", part.failures[0], "violation", text + ("\n\n" + witness if witness else ""))
        elif part.valid == "unknown":
            errors += 1
            _child(case, "error", part.doubts[0], "inconclusive", "\n".join(part.doubts))
        elif part.notes:
            ET.SubElement(case, "system-out").text = "\n".join(part.notes)
        cases.append(case)
    suite_el = ET.Element("testsuite", name=f"leasecheck.{suite}", tests=str(tests),
                          failures=str(failures), errors=str(errors), skipped="0",
                          time=f"{float(result.get('duration_s') or 0):.3f}")
    props = ET.SubElement(suite_el, "properties")
    if run_dir is not None:
        ET.SubElement(props, "property", name="run_dir", value=str(run_dir))
    ET.SubElement(props, "property", name="valid", value=str(result.get("valid")).lower())
    for verdict in ("safety", "liveness"):
        if isinstance(result.get(verdict), dict):
            ET.SubElement(props, "property", name=verdict, value=str(result[verdict].get("valid")).lower())
    suite_el.extend(cases)
    root = ET.Element("testsuites", name="leasecheck", tests=str(tests), failures=str(failures),
                      errors=str(errors))
    root.append(suite_el)
    ET.indent(root)
    return ET.ElementTree(root)


def write_junit(path: Path, result: dict, parts: list, suite: str, run_dir: Path | None) -> None:
    """Write the JUnit file atomically (a CI step reading it never sees half a file)."""
    path = Path(path)
    if path.parent != Path(""):
        path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    junit_xml(result, parts, suite, run_dir).write(tmp, encoding="utf-8", xml_declaration=True)
    os.replace(tmp, path)


def _child(case: ET.Element, tag: str, message: str, kind: str, text: str) -> None:
    el = ET.SubElement(case, tag, message=_clean(message), type=kind)
    el.text = _clean(text)


def _clean(text: str) -> str:
    """XML 1.0 forbids most control characters; a reason quoting raw bytes must not break the file."""
    return "".join(c if c in "\t\n\r" or ord(c) >= 0x20 else "\ufffd" for c in str(text))
