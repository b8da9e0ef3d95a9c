"""Read the small files of a run directory: `config.json` and `store-clock.jsonl` (their names
and encoding: `leasecheck.rundir`), forgiving damage and saying what was wrong.

With `history` and `audit`, the only checker modules that do I/O.
"""
from __future__ import annotations

import json
from pathlib import Path

from leasecheck.events import RUN_START, TIME, TYPE
from leasecheck.rundir import CONFIG, STORE_CLOCK, NotAnObject, load_config as _load_config


def load_config(run_dir, events=None) -> tuple[dict, list[str]]:
    """`(config, problems)`: `config.json`, else the `config` of the history's `run_start`
    (`events`: the history's events, or a function returning them — called only then)."""
    try:
        return _load_config(run_dir), []
    except NotAnObject:
        problem = f"{CONFIG} is not a JSON object"
    except FileNotFoundError:
        problem = f"no {CONFIG}"
    except (OSError, ValueError) as e:
        problem = f"{CONFIG} unreadable ({e})"
    if callable(events):
        events = events()
    start = next((e for e in events or [] if e.get(TYPE) == RUN_START), None)
    if start and isinstance(start.get("config"), dict):
        return start["config"], [f"{problem}: using the config recorded in run_start"]
    return {}, [problem]


def load_store_clock(run_dir, name: str = STORE_CLOCK) -> tuple[list[dict], list[str]]:
    """`(samples, problems)` from `store-clock.jsonl` (or a node's, `name`); ([], []) when it
    does not exist."""
    path = Path(run_dir) / name
    if not path.is_file():
        return [], []
    samples, problems = [], []
    for n, line in enumerate(path.read_text(encoding="utf-8", errors="replace").splitlines(), 1):
        if not line.strip():
            continue
        try:
            s = json.loads(line)
            int(s[TIME]), int(s["store_us"])
            samples.append(s)
        except (ValueError, TypeError, KeyError) as e:
            problems.append(f"{name}:{n}: bad sample skipped ({type(e).__name__}: {e})")
    return samples, problems
