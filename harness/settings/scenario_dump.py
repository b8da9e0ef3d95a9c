"""Write a configuration and a fault schedule as a scenario file (``leasecheck.harness.settings.scenario`` reads it).

Used by ``leasecheck shrink`` for its result. Only what a scenario can say is written: the
``[run]`` options of ``leasecheck.harness.settings.scenario.RUN_KEYS`` and one ``[[event]]`` per step, its size and
parameters under the fault's own keys (``Fault.params``); ``dump`` refuses a step whose values no
key can carry, so a written file always replays the same schedule (the tests read each one
back).
"""
from __future__ import annotations

from leasecheck.harness.faults import FAULTS, Step
from leasecheck.harness.settings.scenario import RUN_KEYS

_FIELD_KEY = {field: key for key, (field, _kind) in RUN_KEYS.items()}
_DURATIONS = {field for field, kind in RUN_KEYS.values() if kind == "duration"}


def dump(name: str, run: dict, steps: list[Step], comment: str = "", description: str = "") -> str:
    """The scenario text: ``run`` maps ``RunConfig`` fields to values (None: left out)."""
    lines = [f"# {line}".rstrip() for line in comment.splitlines()]
    lines.append(f"name = {_str(name)}")
    if description:
        lines.append(f"description = {_str(description)}")
    lines += ["", "[run]"]
    for field, value in run.items():
        if value is None:
            continue
        if field not in _FIELD_KEY:
            raise ValueError(f"a scenario has no [run] option for {field}")
        shown = _seconds(value) if field in _DURATIONS else _value(value)
        lines.append(f"{_FIELD_KEY[field]} = {shown}")
    for step in steps:
        lines += ["", "[[event]]"] + [f"{k} = {v}" for k, v in _event(step)]
    return "\n".join(lines) + "\n"


def _event(step: Step) -> list[tuple[str, str]]:
    fault = FAULTS[step.fault]
    out = [("at", _seconds(step.at)), ("fault", _str(step.fault)), ("target", _str(step.target)),
           ("duration", _seconds(step.duration))]
    carried = set()
    for p in fault.params:
        value = step.size if p.into == "size" else step.params.get(p.into)
        if value is None:
            continue
        carried.add(p.into)
        if p.kind == "signed":
            out.append((p.key, _str(f"{'-' if value < 0 else '+'}{_num(abs(value))}s")))
        elif p.kind == "ms":
            out.append((p.key, _str(f"{_num(value)}ms")))
        elif p.kind == "duration":
            out.append((p.key, _seconds(value)))
        else:
            out.append((p.key, _str(str(value))))
    # `background` (a named mix's late replies) only tells a drawn schedule's turns apart; a scenario's
    # events play at their own times, overlapping as they are written, so it needs no key.
    left = [k for k in step.params if k not in carried and k != "background"] + (["size"] if step.size is not None and
                                                          "size" not in carried else [])
    if left:
        raise ValueError(f"a {step.fault} event has no key for its {left[0]} ({step.to_json()})")
    return out


def _seconds(value: float) -> str:
    return _str(f"{_num(value)}s")


def _num(value: float) -> str:
    """Up to microseconds, no trailing zeros: 2.110062, 0.5, 12."""
    return f"{float(value):.6f}".rstrip("0").rstrip(".") or "0"


def _value(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    return _str(str(value))


def _str(text: str) -> str:
    """A TOML basic string."""
    escaped = text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    return f'"{escaped}"'
