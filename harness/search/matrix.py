"""``leasecheck matrix``: every lease under every fault mix, each cell one ordinary run.

The cells are planned (``preflight``) all together before the first one starts, so an unknown
lease or fault, or any other bad setting, is refused before anything runs. Every cell gets the
same seed (given, or drawn once), so the leases of one column face the same job durations and
the same drawn fault schedule. The cells then run one after another; each leaves an ordinary run
directory (``results/<lease>/<time>/``, with its ``report.html``), and the matrix writes a table
of their verdicts (``leasecheck.harness.search.matrix_table``).

A cell whose only failure is the store breaking every lease's promise reads ``INVALID (store)``:
a finding about the store's configuration, not the lease (still a failing exit code).

Exit code of the whole matrix: 1 when any cell is INVALID (either kind); else 2 when any cell is not VALID
(inconclusive, its harness failed, or it never ran because the matrix was interrupted); else 0.
"""
from __future__ import annotations

import os
import platform
from dataclasses import dataclass, field
from pathlib import Path

from leasecheck.harness.errors import UsageError
from leasecheck.result import Result
from leasecheck.workloads.leases import BUILTIN

NO_FAULTS = "none"
# The built-in leases that need no optional package (python-redis-lock and pottery are the
# `libs` extra): the default rows, so `leasecheck matrix` works on a plain install.
NEEDS_EXTRA = ("python-redis-lock", "python-redis-lock-renew", "pottery-redlock", "pottery-redlock-n")
NEEDS_SERVER = ("token-cas-ifeq",)   # renews with Valkey's SET ... IFEQ: refused on the default Redis
NEEDS_NODE = tuple(name for name, target in BUILTIN.items() if target.startswith("exec:node "))  # + npm install
DEFAULT_LEASES = tuple(name for name in BUILTIN if name not in NEEDS_EXTRA + NEEDS_SERVER + NEEDS_NODE)
# Without faults (a release by key name fails here: the jobs outlive the TTL), the default mix (aimed
# pauses and late replies: a check-then-act release fails), and a store clock jump (every lease's
# promise broken by the store: its cells read INVALID (store)). docs/how-to/validate-a-lock-library.md
DEFAULT_MIXES = (NO_FAULTS, "default", "clock:store")

VALID, INVALID, INCONCLUSIVE, CRASHED, NOT_RUN = "VALID", "INVALID", "INCONCLUSIVE", "CRASHED", "NOT RUN"
# INVALID, and only because the store broke the promise every lease makes (results.json
# failure_of "store": early loss by a clock jump, an eviction, a restart, a failover).
INVALID_STORE = "INVALID (store)"
FAILING = (INVALID, INVALID_STORE)


@dataclass(frozen=True)
class Cell:
    """One lease under one fault mix, once it ran (or did not)."""
    lease: str
    mix: str                        # a --nemesis value, or "none"
    verdict: str                    # VALID / INVALID / INCONCLUSIVE / CRASHED / NOT RUN
    run_dir: Path | None = None
    counts: dict = field(default_factory=dict)   # foreign_releases, overlap, found_nothing, ...
    reason: str = ""                # the first failure or doubt of a cell that is not VALID


def split_list(values, option: str) -> list[str]:
    """``("naive-del,token-cas", "fixed-token")`` -> the three names, in order, each once."""
    out: list[str] = []
    for value in values:
        for name in (v.strip() for v in value.split(",")):
            if not name:
                continue
            if name in out:
                raise UsageError(f"{option} {name} is named twice; name each once")
            out.append(name)
    return out


def mixes(values) -> list[str]:
    """Each ``--nemesis`` value is one column (a mix of faults, comma-separated inside it)."""
    out: list[str] = []
    for value in values:
        mix = ",".join(part.strip() for part in value.split(",") if part.strip())
        if not mix:
            raise UsageError(f"--nemesis {value!r}: name a fault mix, e.g. --nemesis pause:holder, "
                             f"or --nemesis {NO_FAULTS} for a column without faults")
        if mix in out:
            raise UsageError(f"--nemesis {mix} is named twice; name each mix once")
        out.append(mix)
    return out


def nemesis_of(mix: str) -> str | None:
    return None if mix == NO_FAULTS else mix


def cell_from_result(lease: str, mix: str, result: Result) -> Cell:
    """A checked cell, from its `Result`."""
    verdict = VALID if result.valid is True else INVALID if result.valid is False else INCONCLUSIVE
    if verdict == INVALID and result.data.get("failure_of") == "store":
        verdict = INVALID_STORE
    counts = {"foreign_releases": result.foreign_releases, "token_reuse": result.token_reuse,
              "early_loss": result.early_loss, "overlap": result.overlap.count,
              "found_nothing": result.releases_found_nothing}
    # A result lists its failures and doubts first, when it has any.
    counts["hazards_missed"] = list((result.data.get("hazards") or {}).get("missed") or [])
    return Cell(lease, mix, verdict, result.run_dir, counts, result.reason if verdict != VALID else "")


def exit_code(cells: list[Cell]) -> int:
    """1 if any cell is INVALID (its own or the store's); 2 if none is but some cell is not VALID; 0 otherwise."""
    if any(c.verdict in FAILING for c in cells):
        return 1
    if any(c.verdict != VALID for c in cells):
        return 2
    return 0


def machine() -> str:
    """``x86_64, 2 cores, Python 3.11.7``: what a reader of the table needs to weigh it."""
    return f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}"
