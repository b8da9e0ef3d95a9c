"""The run directory, named once: every file a run writes there, and how the JSON ones are read
and written. docs/history.md ("Run directory") lists the same files in words.

The harness writes a run directory and the checker reads it; both take the names from here
(``RunFiles(run_dir).config``, ``node_files(...)``) and read or write ``config.json``,
``results.json`` and ``schedule.json`` with the functions below, so the encoding of each file is
fixed in one place. Like ``leasecheck.protocol``, this module imports nothing of either side.
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Final

# -- the files ------------------------------------------------------------------------------------
CONFIG = "config.json"              # the effective configuration (leasecheck.harness.settings.config)
RESULTS = "results.json"            # the verdict (leasecheck.checkers.result.Result)
SCHEDULE = "schedule.json"          # the fault steps
HISTORY: Final = "history.jsonl"           # the merged history, written when the run ends
HISTORY_PARTS: Final = "history.d"         # the raw histories while the run goes, one file per process
PART_SUFFIX: Final = ".jsonl"              # history.d/<process>.jsonl
HARNESS_PART = "harness"            # history.d/harness.jsonl: run_start, run_end, the nemesis
AUDIT: Final = "audit.log"                 # the store's MONITOR stream (one store)
STORE_CLOCK = "store-clock.jsonl"   # the store's clock against the history clock (one store)
STORE_LOG = "store.log"             # the store's own log
FAKETIME = "faketime"               # libfaketime timestamp files (clock faults)
FAULTS_ACTIVE = "faults-active.json"   # undo entries of faults in progress
WORKERS_LOG = "workers.log"         # the workers' stderr
SLOTS = "slots.bin"                 # what each slot is doing (removed when the workers have stopped)
JOB_NUMBERS = "job-numbers"         # a byte per job started, numbering them run-wide (removed with slots.bin)
WITNESS_MD = "witness.md"           # the violations as timelines a person reads
WITNESS_JSON = "witness.json"       # the same, as data (the report draws them)
REPORT = "report.html"              # the run drawn for a person
TIMELINE = "timeline.json"          # what report.html draws of the history, gathered by the check
SHRUNK = "shrunk.toml"              # `leasecheck shrink`'s scenario (default place)
SHRINK_DIR = "shrink"               # the runs of `leasecheck shrink`
INCIDENT = "incident.md"            # `leasecheck hunt`: its failing run as an incident report
REPLAYS_DIR = "replays"             # `leasecheck hunt`: the incident report's replays (a results directory)
PROXY_PEERS_LOG = "proxy-peers.log"  # --topology replicated: the peer proxy's log
SENTINELS = "sentinels"             # --topology replicated: the Sentinels' config files
# In a results folder, next to the run directories:
LATEST = "latest"                   # a link to the newest run
INDEX = "index.html"                # the runs with links to their reports


def part_name(process: str) -> str:
    """``history.d/<process>.jsonl``'s file name (``harness``, ``w0``, ...)."""
    return process + PART_SUFFIX


def sentinel_log(name: str) -> str:
    return f"{name}.log"            # sentinel-1.log ...


# -- per node ---------------------------------------------------------------------------------------
def node_suffix(node: str, alone: bool) -> str:
    """``""`` for the only node of a run (the names every run directory has always had),
    ``"-node2"`` for a node among several, ``node1`` included."""
    return "" if alone else f"-{node}"


def node_audit(node: str) -> str:
    """``audit-node2.log``: the audit of a node among several."""
    return f"audit-{node}.log"


def node_clock(node: str) -> str:
    """``store-clock-node2.jsonl``: the clock samples of a node among several."""
    return f"store-clock-{node}.jsonl"


@dataclass(frozen=True)
class NodeNames:
    """The file names of one node (relative to the run directory)."""
    suffix: str
    audit: str
    clock: str
    log: str
    faketime: str       # under FAKETIME/


def node_names(node: str, alone: bool) -> NodeNames:
    s = node_suffix(node, alone)
    return NodeNames(suffix=s, audit=node_audit(node) if s else AUDIT,
                     clock=node_clock(node) if s else STORE_CLOCK,
                     log=f"store{s}.log", faketime=f"store{s}")


# -- paths ------------------------------------------------------------------------------------------
class RunFiles:
    """The paths of one run directory's files: ``RunFiles(run_dir).results`` ..."""

    def __init__(self, run_dir) -> None:
        self.dir = Path(run_dir)

    def __getattr__(self, attr: str) -> Path:
        name = _PATHS.get(attr)
        if name is None:
            raise AttributeError(attr)
        return self.dir / name

    def part(self, process: str) -> Path:
        return self.dir / HISTORY_PARTS / part_name(process)

    def has_history(self) -> bool:
        """A merged history or the raw parts of one."""
        return (self.dir / HISTORY).is_file() or (self.dir / HISTORY_PARTS).is_dir()


_PATHS = {"config": CONFIG, "results": RESULTS, "schedule": SCHEDULE, "history": HISTORY,
          "parts": HISTORY_PARTS, "audit": AUDIT, "store_clock": STORE_CLOCK, "faketime": FAKETIME,
          "faults_active": FAULTS_ACTIVE, "workers_log": WORKERS_LOG, "witness_md": WITNESS_MD,
          "witness_json": WITNESS_JSON, "report": REPORT, "timeline": TIMELINE}


# -- reading and writing the JSON files ---------------------------------------------------------------
def dump_config(config: dict) -> str:
    """``config.json``'s text: indented, keys sorted."""
    return json.dumps(config, indent=2, sort_keys=True) + "\n"


def save_config(run_dir, config: dict) -> Path:
    """Write ``config.json`` (``RunConfig.to_json()``) into ``run_dir`` (or to that file)."""
    path = _file(run_dir, CONFIG)
    path.write_text(dump_config(config))
    return path


def load_config(run_dir) -> dict:
    """``config.json`` of ``run_dir`` (or that file) as a dict. Raises ``FileNotFoundError``,
    ``NotAnObject``, ``ValueError`` (not JSON) or another ``OSError``."""
    return _object(_file(run_dir, CONFIG))


def save_results(run_dir, results: dict) -> Path:
    """Write ``results.json`` (``Result.to_dict()``): indented, keys sorted."""
    path = Path(run_dir) / RESULTS
    path.write_text(json.dumps(results, indent=2, sort_keys=True) + "\n")
    return path


def load_results(run_dir) -> dict:
    """``results.json`` as a dict; raises as ``load_config``."""
    return _object(Path(run_dir) / RESULTS)


def save_schedule(run_dir, steps: list[dict]) -> Path:
    path = Path(run_dir) / SCHEDULE
    path.write_text(json.dumps(steps, indent=1) + "\n")
    return path


def load_schedule(run_dir) -> list:
    """``schedule.json``'s steps; ``[]`` when the run has none."""
    path = Path(run_dir) / SCHEDULE
    return json.loads(path.read_text()) if path.is_file() else []


def save_witnesses(run_dir, markdown: str, witnesses: list[dict]) -> None:
    d = Path(run_dir)
    (d / WITNESS_MD).write_text(markdown)
    (d / WITNESS_JSON).write_text(json.dumps(witnesses, indent=2) + "\n")


def save_timeline(run_dir, drawing: dict) -> Path:
    """Write ``timeline.json`` (``checkers.measures.timeline.Timeline.drawing``): compact, one line."""
    path = Path(run_dir) / TIMELINE
    path.write_text(json.dumps(drawing, separators=(",", ":")) + "\n", encoding="utf-8")
    return path


def read_json(path: os.PathLike):
    """A JSON file's value, or None when it is missing or unreadable."""
    try:
        return json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def read_object(path: os.PathLike) -> dict | None:
    """A JSON file's object, or None when it is missing, unreadable or not an object."""
    value = read_json(path)
    return value if isinstance(value, dict) else None


def _file(where, name: str) -> Path:
    """``where/name`` for a directory; ``where`` itself for a file's path."""
    p = Path(where)
    return p / name if p.is_dir() else p


class NotAnObject(ValueError):
    """A run file that must hold a JSON object holds another value."""


def _object(path: Path) -> dict:
    value = json.loads(path.read_text(encoding="utf-8"))
    if not isinstance(value, dict):
        raise NotAnObject(f"{path.name} is not a JSON object")
    return value
