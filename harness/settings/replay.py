"""``--replay RUN_DIR``: the settings a past run made and its exact fault timeline, read back.

A run directory is data a person may have edited, copied half or that a full disk truncated, so
every value is checked the way a scenario file's are (`scenario.convert`): ``config.json``'s
settings by their kind, ``schedule.json``'s steps field by field. Anything wrong is one
`UsageError` naming the file, the line and the fix, before anything starts.
"""
from __future__ import annotations

import dataclasses
import json
import math
import re
from pathlib import Path

from leasecheck.harness.errors import UsageError
from leasecheck.harness.faults import FAULTS, unknown_fault
from leasecheck.harness.settings.config import RunConfig, replayed_fields, settings
from leasecheck.harness.settings.scenario import convert
from leasecheck.harness.settings.text_file import read_utf8
from leasecheck.rundir import CONFIG, RunFiles

_STEP_NUMBERS = ("at", "duration")


def replayed(run_dir: Path, said: str = "--replay", origins: dict | None = None) -> dict:
    """`RunConfig` field values of the run in ``run_dir`` (its ``config.json``) with its
    ``schedule.json`` as ``schedule``; `UsageError` for a missing or malformed file. ``origins``,
    if given, receives each field's ``file:FILE:LINE KEY`` (for the preflight's errors)."""
    run_dir = Path(run_dir)
    if not RunFiles(run_dir).config.is_file():
        raise UsageError(f"{said} {run_dir}: no {CONFIG} there; pass a run directory such as results/latest")
    base = config_values(run_dir, replayed_fields(), said, origins)
    base["schedule"] = schedule_steps(run_dir, said)
    return base


def config_values(run_dir: Path, fields, said: str, origins: dict | None = None) -> dict:
    """The ``fields`` of ``run_dir``'s ``config.json`` that it holds, each checked by its kind."""
    path = RunFiles(run_dir).config
    text, old = _json(path, said)
    if not isinstance(old, dict):
        raise UsageError(f"{said}: {path}:1: not a JSON object; pass a run directory whose config.json "
                         "leasecheck wrote")
    kinds = settings()
    defaults = {f.name: f.default for f in dataclasses.fields(RunConfig)}
    base = {}
    for key in fields:
        if key not in old:
            continue
        value, loc = old[key], f"{path}:{_line_of(text, key)}"
        if value is None:
            if defaults.get(key) is not None:
                raise UsageError(f"{said}: {loc}: {key} is null; write a value or delete the line")
            base[key] = None
            continue
        base[key] = convert(value, kinds[key].kind, f"{said}: {loc}", key)
        if origins is not None:
            origins[key] = f"file:{loc} {key}"
    return base


def schedule_steps(run_dir: Path, said: str) -> list[dict]:
    """``run_dir``'s ``schedule.json`` steps, each checked (``[]`` when there is none)."""
    return _schedule(RunFiles(run_dir).schedule, said)


def _schedule(path: Path, said: str) -> list[dict]:
    if not path.is_file():
        return []
    text, steps = _json(path, said)
    if not isinstance(steps, list):
        raise UsageError(f"{said}: {path}:1: not a JSON list of fault steps")
    starts = [i + 1 for i, line in enumerate(text.splitlines()) if line.strip().startswith("{")]
    out = []
    for n, step in enumerate(steps):
        line = starts[n] if n < len(starts) else 1
        out.append(_step(step, f"{said}: {path}:{line} (step {n + 1})"))
    return out


def _step(step, loc: str) -> dict:
    """One schedule step checked: what `Step.from_json` and the nemesis read."""
    if not isinstance(step, dict):
        raise UsageError(f"{loc}: a step is an object with at, fault, target, duration")
    for key in ("at", "fault", "target", "duration"):
        if key not in step:
            raise UsageError(f"{loc}: the step has no {key!r}")
    fault = step["fault"]
    if not isinstance(fault, str) or fault not in FAULTS:
        raise UsageError(f"{loc}: {unknown_fault(str(fault))}")
    if not isinstance(step["target"], str):
        raise UsageError(f"{loc}: target must be a string, not {step['target']!r}")
    for key in _STEP_NUMBERS:
        v = step[key]
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v < 0:
            raise UsageError(f"{loc}: {key} must be a number of seconds >= 0, not {v!r}")
    size = step.get("size")
    if size is not None and (isinstance(size, bool) or not isinstance(size, (int, float))
                             or not math.isfinite(size)):
        raise UsageError(f"{loc}: size must be a number or null, not {size!r}")
    params = step.get("params") or {}
    if not isinstance(params, dict) or not all(
            isinstance(k, str) and isinstance(v, (str, float, int))    # bool: a flag (background)
            and (not isinstance(v, float) or math.isfinite(v))
            for k, v in params.items()):
        raise UsageError(f"{loc}: params must be an object of names to strings, numbers or "
                         f"true/false, not {params!r}")
    return {"at": float(step["at"]), "fault": fault, "target": step["target"],
            "duration": float(step["duration"]), "size": size, "params": dict(params)}


def _json(path: Path, said: str):
    """(text, value) of a JSON file, or `UsageError` naming its line."""
    text = read_utf8(path, f"{said}: cannot read {path}",
                     "restore the file or pass another run directory", said)
    try:
        return text, json.loads(text)
    except json.JSONDecodeError as e:
        raise UsageError(f"{said}: {path}:{e.lineno}: not JSON ({e.msg}, column {e.colno}); "
                         "restore the file or pass another run directory") from None
    except RecursionError:
        raise UsageError(f"{said}: {path}:1: nested too deeply to read; "
                         "restore the file or pass another run directory") from None


def _line_of(text: str, key: str) -> int:
    m = re.search(rf'^\s*"{re.escape(key)}"\s*:', text, re.M)
    return text.count("\n", 0, m.start()) + 1 if m else 1
