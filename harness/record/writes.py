"""When the run directory stops taking writes: out of disk, over quota, made read-only mid-run.

Every recorder of the harness process (the audit, the clock sampler, the history, the healing
ledger) that fails to write a file of the run directory calls `note` instead of raising out of
its thread; the runner polls `failure(run_dir)` and stops the run — heals every fault, stops the
workers and the store, keeps what is on disk — and then raises `Unwritable`, which the command
line prints as one line (exit 3). A worker whose history cannot be written stops its slots and
exits with `WORKER_EXIT`. Nothing here knows a file format.
"""
from __future__ import annotations

import errno
import os
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from leasecheck.harness.errors import LeasecheckError

# Errors that mean "this file system takes no more of our writes", not a bug of ours.
UNWRITABLE = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EFBIG, errno.EACCES, errno.EPERM})
WORKER_EXIT = 75        # EX_TEMPFAIL: a worker stopped because its history could not be written


def unwritable(e: BaseException) -> bool:
    """Whether ``e`` is a file system refusing a write."""
    return isinstance(e, OSError) and e.errno in UNWRITABLE


@dataclass(frozen=True)
class Failure:
    path: Path
    error: OSError
    at_ns: int            # CLOCK_MONOTONIC when it happened

    def describe(self) -> str:
        return f"could not write {self.path.name} ({os.strerror(self.error.errno)})"


_lock = threading.Lock()
_failures: list[Failure] = []


def note(path: os.PathLike, e: OSError) -> None:
    """Remember that writing ``path`` failed with ``e`` (the first failure of a directory counts)."""
    with _lock:
        _failures.append(Failure(Path(path).resolve(), e, time.monotonic_ns()))


def failure(run_dir: os.PathLike) -> Failure | None:
    """The first write that failed under ``run_dir`` (in this process), or None."""
    if not _failures:     # the common case, asked every 100 ms of a run: no path resolved
        return None
    root = Path(run_dir).resolve()
    with _lock:
        return next((f for f in _failures if f.path == root or root in f.path.parents), None)


def forget(run_dir: os.PathLike) -> None:
    """Drop the failures noted under ``run_dir`` (the run has reported them)."""
    root = Path(run_dir).resolve()
    with _lock:
        _failures[:] = [f for f in _failures if not (f.path == root or root in f.path.parents)]


class Unwritable(LeasecheckError):
    """The run directory stopped taking writes mid-run; the run was stopped and healed.
    ``kept`` names what is on disk; the message is one line ending with the command to judge it."""

    def __init__(self, run_dir: Path, first: Failure, kept: list[str], at_s: float | None):
        self.run_dir, self.first, self.kept = Path(run_dir), first, kept
        when = f" at {at_s:.1f} s" if at_s is not None else ""
        super().__init__(
            f"{run_dir}: {first.describe()}{when}: the run stopped, healed its faults and kept what it had "
            f"recorded ({'; '.join(kept) or 'nothing'}); a run cut short is never VALID: free space, then "
            f"judge it with: leasecheck check {run_dir}")
