"""Load a run's history (see docs/history.md): the loader; the only checker module besides
`audit` and `rundir` that touches files.

`load_history(run_dir)` prefers the merged `history.jsonl`. Without it (a killed run), it merges
`history.d/*.jsonl` in memory: each file is in time order, so a k-way merge by (`time`, file order)
gives the whole history; nothing is written. Events get `index` (their 0-based position) when
they lack it.

Damage is tolerated and reported, never hidden: a file's last line that is not valid JSON is a
torn write ("history.d/w3.jsonl:120: torn last line (run was killed?)"); a bad line anywhere else
is skipped and reported with its file and line number. No history at all, or one without a single
event, raises `HistoryError`.
"""
from __future__ import annotations

import heapq
import json
import os
import re
from pathlib import Path
from typing import Iterator

from .errors import HistoryError

try:  # orjson parses the history several times faster; the standard library is the fallback
    from orjson import loads as _loads
except ImportError:  # pragma: no cover
    _loads = json.loads

MERGED = "history.jsonl"
PARTS = "history.d"


def load_history(run_dir) -> tuple[list[dict], list[str]]:
    """Return `(events, problems)` for the run in `run_dir`, in history order.

    Raises `HistoryError` when neither `history.jsonl` nor `history.d/` holds any event.
    """
    run = Path(run_dir)
    merged = run / MERGED
    if merged.is_file():
        events, problems = _read_file(merged, run)
        if events:
            return _indexed(events), problems
    parts = _part_files(run)
    if not parts:
        where = f"{MERGED} has no events" if merged.is_file() else f"no {MERGED} and no {PARTS}/*.jsonl"
        raise HistoryError(f"no history to check in {run}: {where}")
    events, problems = _merge(parts, run)
    if not events:
        raise HistoryError(f"no history to check in {run}: {PARTS}/*.jsonl hold no events")
    return _indexed(events), problems


def write_merged(run_dir) -> list[str]:
    """Merge `history.d/*.jsonl` into `history.jsonl` (with `index`); return the problems found.

    The file is written to a temporary name and renamed, so a reader never sees half of it.
    Raises `HistoryError` when `history.d/` holds no events.
    """
    run = Path(run_dir)
    events, problems = _merge(_part_files(run), run)
    if not events:
        raise HistoryError(f"cannot merge the history of {run}: {PARTS}/*.jsonl hold no events")
    tmp = run / (MERGED + ".tmp")
    with open(tmp, "w", encoding="utf-8") as out:
        for i, event in enumerate(events):
            out.write(json.dumps({**event, "index": i}, separators=(",", ":")) + "\n")
    os.replace(tmp, run / MERGED)
    return problems


def _part_files(run: Path) -> list[Path]:
    """The per-process files in a stable order: harness, then w0, w1, ..., w10 (numbers as numbers)."""
    def natural(p: Path):
        return [int(s) if s.isdigit() else s for s in re.split(r"(\d+)", p.name)]
    return sorted((run / PARTS).glob("*.jsonl"), key=natural)


def _merge(paths: list[Path], run: Path) -> tuple[list[dict], list[str]]:
    problems: list[str] = []
    streams, tables = [], []
    for order, path in enumerate(paths):
        events, found = _read_file(path, run)
        problems += found
        streams.append([(e["time"], order, n) for n, e in enumerate(events)])
        tables.append(events)
    return [tables[order][n] for _, order, n in heapq.merge(*streams)], problems


def _read_file(path: Path, run: Path) -> tuple[list[dict], list[str]]:
    name = path.relative_to(run).as_posix()
    events: list[dict] = []
    problems: list[str] = []
    last_time = None
    for lineno, line, is_last, has_newline in _lines(path):
        try:
            event = _parse_event(line)
        except ValueError as e:
            if is_last:
                problems.append(f"{name}:{lineno}: torn last line (run was killed?)")
            else:
                problems.append(f"{name}:{lineno}: malformed line skipped ({e})")
            continue
        if is_last and not has_newline:
            problems.append(f"{name}:{lineno}: last line has no newline (kept: it is complete JSON)")
        if last_time is not None and event["time"] < last_time:
            problems.append(f"{name}:{lineno}: time goes backwards ({event['time']} < {last_time})")
        last_time = event["time"]
        events.append(event)
    return events, problems


def _lines(path: Path) -> Iterator[tuple[int, str, bool, bool]]:
    """Yield (line number, text, is the last non-blank line, ends with a newline); blank lines skipped."""
    text = path.read_text(encoding="utf-8", errors="replace")
    lines = text.split("\n")
    ends_with_newline = lines[-1] == ""
    if ends_with_newline:
        lines.pop()
    last = max((i for i, s in enumerate(lines) if s.strip()), default=-1)
    for i, line in enumerate(lines):
        if line.strip():
            yield i + 1, line, i == last, i < len(lines) - 1 or ends_with_newline


def _parse_event(line: str) -> dict:
    try:
        event = _loads(line)
    except json.JSONDecodeError as e:
        raise ValueError(f"invalid JSON: {e.msg} at column {e.colno}") from None
    if not isinstance(event, dict):
        raise ValueError("not a JSON object")
    if not isinstance(event.get("time"), int) or isinstance(event.get("time"), bool):
        raise ValueError(f"'time' must be integer nanoseconds, got {event.get('time')!r}")
    if not isinstance(event.get("type"), str):
        raise ValueError(f"'type' must be a string, got {event.get('type')!r}")
    return event


def _indexed(events: list[dict]) -> list[dict]:
    for i, event in enumerate(events):
        event.setdefault("index", i)
    return events
