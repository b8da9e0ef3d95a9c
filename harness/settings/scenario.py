"""Scenario files: an incident written down once, replayed at will.

A scenario is TOML: a ``[run]`` table with any ``leasecheck run`` option (spelled with ``_`` or
``-``; durations as ``"5s"`` or a number of seconds) and a timeline of ``[[event]]`` tables::

    name = "holder-pause"
    [run]
    lease = "naive-del"
    ttl = "3s"
    [[event]]
    at = "5s"            # seconds into the run
    fault = "pause"
    target = "holder"    # optional: the fault's default target
    duration = "4s"
    # clock only: offset = "+6s" (or -2s), mode = "strobe", period = "50ms"
    # latency only: latency = "200ms", jitter = "20ms"

An event's keys beyond ``at``, ``fault``, ``target`` and ``duration`` are the fault's own
parameters (``Fault.params``, from the fault registry). Options given on the command line win over
the file. Errors name the file, the line and what is wrong.
"""
from __future__ import annotations

import re
import tomllib
from pathlib import Path

from leasecheck.harness.settings.config import scenario_keys
from leasecheck.harness.settings.durations import parse_duration
from leasecheck.harness.settings.text_file import read_utf8
from leasecheck.harness.errors import UsageError
from leasecheck.harness.faults import FAULTS, Param, unknown_fault

RUN_KEYS = scenario_keys()   # [run] key -> (RunConfig field, kind), declared by RunConfig
EVENT_KEYS = ("at", "fault", "target", "duration")   # every event; the rest are the fault's own


def load_scenario(path: Path, origins: dict | None = None) -> tuple[dict, list[dict]]:
    """(RunConfig field values, schedule steps as JSON dicts) from a scenario file. ``origins``,
    if given, receives each field's ``file:FILE:LINE KEY`` (for the preflight's errors)."""
    path = Path(path)
    text = read_utf8(path, f"--scenario {path}: cannot read it", "a scenario file is UTF-8 text")
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise UsageError(f"{path}:{_toml_line(e, text)}: not valid TOML: {e}") from None
    where = _Locator(path, text)
    unknown = set(doc) - {"name", "description", "run", "event"}
    if unknown:
        key = sorted(unknown)[0]
        raise UsageError(f"{where(key)}: unknown key {key!r}; a scenario has name, description, "
                         "[run] and [[event]]")
    values = {}
    run = doc.get("run", {})
    if not isinstance(run, dict):
        raise UsageError(f"{where('run')}: [run] must be a table")
    for raw_key, value in run.items():
        key = raw_key.replace("-", "_")
        if key not in RUN_KEYS:
            raise UsageError(f"{where(raw_key)}: unknown [run] option {raw_key!r}; known: "
                             f"{', '.join(sorted(RUN_KEYS))}")
        field, kind = RUN_KEYS[key]
        values[field] = convert(value, kind, where(raw_key), raw_key)
        if origins is not None:
            origins[field] = f"file:{where(raw_key)} {raw_key}"
    if "name" in doc and "name" not in values:
        values["name"] = str(doc["name"])
    steps = []
    events = doc.get("event", [])
    if not isinstance(events, list):
        raise UsageError(f"{where('event')}: write events as [[event]] tables")
    for i, ev in enumerate(events):
        steps.append(_event(ev, where.event(i)))
    steps.sort(key=lambda s: s["at"])
    return values, steps


def _toml_line(e: tomllib.TOMLDecodeError, text: str) -> int:
    """The line a TOML error names (``(at line 3, column 5)``; ``at end of document``: the last)."""
    m = re.search(r"at line (\d+)", str(e))
    return int(m.group(1)) if m else max(1, text.count("\n") + (not text.endswith("\n")))


def _event(ev: dict, where) -> dict:
    """One ``[[event]]`` as a schedule step; ``where(key)`` is ``file:line`` of that key in it."""
    for required in ("at", "fault", "duration"):
        if required not in ev:
            raise UsageError(f"{where(None)}: the event has no {required!r}")
    name = str(ev["fault"])
    fault = FAULTS.get(name)
    if fault is None:
        raise UsageError(f"{where('fault')}: {unknown_fault(name)}")
    own = {p.key: p for p in fault.params}
    bad = [k for k in ev if k not in EVENT_KEYS and k not in own]
    if bad:
        known = ", ".join(list(EVENT_KEYS) + list(own))
        raise UsageError(f"{where(bad[0])}: a {name} event has no key {bad[0]!r}; its keys: {known}")
    target = str(ev.get("target", fault.default_target))
    if fault.acts_as(target) not in fault.targets:   # a node's name is checked against the run's nodes later
        raise UsageError(f"{where('target')}: {name} targets are {', '.join(fault.targets)}, not {target!r}")
    size, params = None, {}
    for key, value in ev.items():
        if key in own:
            p = own[key]
            converted = _param(p, value, where(key))
            if p.into == "size":
                size = converted
            else:
                params[p.into] = converted
    return {"at": convert(ev["at"], "duration", where("at"), "at"), "fault": name, "target": target,
            "duration": convert(ev["duration"], "duration", where("duration"), "duration"),
            "size": size, "params": params}


def _param(p: Param, value, loc: str):
    if p.kind == "signed":
        return _signed_duration(value, loc)
    if p.kind == "ms":
        return round(convert(value, "duration", loc, p.key) * 1000, 3)
    if p.kind == "duration":
        return convert(value, "duration", loc, p.key)
    if p.kind == "choice" and str(value) not in p.choices:
        raise UsageError(f"{loc}: {p.key} is one of {', '.join(p.choices)}, not {value!r}")
    return str(value)


def convert(value, kind, loc: str, key: str):
    """``value`` read as a setting of ``kind`` (str, int, float, bool or ``"duration"``: seconds or
    ``"1.5s"``), or `UsageError` naming ``loc`` (where it was written) and ``key``."""
    if kind == "duration":
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return float(value)
        try:
            return parse_duration(str(value), key)
        except UsageError as e:
            raise UsageError(f"{loc}: {e}") from None
    if kind in (int, float) and (isinstance(value, bool) or not isinstance(value, (int, float))):
        raise UsageError(f"{loc}: {key} must be a number, not {value!r}")
    if kind is int and not isinstance(value, int):
        raise UsageError(f"{loc}: {key} must be a whole number, not {value!r}")
    if kind is bool and not isinstance(value, bool):
        raise UsageError(f"{loc}: {key} must be true or false, not {value!r}")
    if kind is str and not isinstance(value, str):
        raise UsageError(f"{loc}: {key} must be a string, not {value!r}")
    return kind(value)


def _signed_duration(value, loc: str) -> float:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    text = str(value).strip()
    sign = -1.0 if text.startswith("-") else 1.0
    try:
        return sign * parse_duration(text.lstrip("+-"), "offset")
    except UsageError as e:
        raise UsageError(f"{loc}: {e}") from None


class _Locator:
    """``file:line`` of a key (or of the n-th ``[[event]]``) in the scenario text."""

    def __init__(self, path: Path, text: str):
        self.path, self.lines = path, text.splitlines()

    def event(self, nth: int):
        """``where(key)`` for the n-th event: the key's own line, with the event's header line
        (``where(None)``: the header alone)."""
        header = self("[[event]]", nth)
        head_line = int(header.rsplit(":", 1)[1]) if header != str(self.path) else 0
        start_pattern = re.compile(r"^\s*\[")

        def where(key: str | None) -> str:
            if key is None or not head_line:
                return header
            pattern = re.compile(rf"^\s*{re.escape(key)}\s*=")
            for i in range(head_line, len(self.lines)):
                line = self.lines[i]
                if start_pattern.match(line):
                    break
                if pattern.match(line):
                    return f"{self.path}:{i + 1} ([[event]] at {header})"
            return header
        return where

    def __call__(self, key: str, nth: int = 0) -> str:
        if key == "[[event]]":
            pattern = re.compile(r"^\s*\[\[\s*event\s*\]\]")
        else:
            pattern = re.compile(rf"^\s*(\[\s*)?{re.escape(key)}\s*[=\]]")
        seen = 0
        for i, line in enumerate(self.lines, 1):
            if pattern.match(line):
                if seen == nth:
                    return f"{self.path}:{i}"
                seen += 1
        return str(self.path)
