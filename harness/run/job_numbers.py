"""The run's jobs numbered in the order they start, across every worker and slot.

A job-duration mixture gives each part its exact share of every block of consecutive jobs of the
run (``durations.JobDraws``), which needs one count shared by every slot of every worker. Each slot
opens ``RUN_DIR/job-numbers`` for appending, and a job about to start appends one byte: the file's
length after the append is the job's number plus one. An append to a file opened with ``O_APPEND``
finds the end and writes there in one step, and each slot's own open file keeps its own offset, so
no two jobs get one number and no lock is taken: a system call per job, and only for mixtures.
(A file system that does not make appends atomic — NFS — could number two jobs alike: the shares
would then be off by that much, nothing else.)
"""
from __future__ import annotations

import os
from pathlib import Path

from leasecheck.rundir import JOB_NUMBERS as FILE   # in the run directory, removed when the workers have stopped


class JobNumbers:
    """One slot's way to take the next job number (``numbers()``)."""

    def __init__(self, path: Path) -> None:
        self._fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o644)

    def __call__(self) -> int:
        os.write(self._fd, b"\n")
        return os.lseek(self._fd, 0, os.SEEK_CUR) - 1

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1
