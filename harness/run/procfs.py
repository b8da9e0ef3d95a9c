"""What the kernel says about a process, from ``/proc`` (Linux)."""
from __future__ import annotations

import os


def proc_state(pid: int | None) -> str | None:
    """The process's state letter (field 3 of ``/proc/PID/stat``): ``R`` running, ``S`` sleeping,
    ``T`` stopped by a signal (SIGSTOP), ``Z`` zombie, ...; None when there is no such process.
    The command name (field 2) may hold spaces and parentheses, so the line is split after the
    last ``)``."""
    if pid is None:
        return None
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return None


def is_stopped(pid: int | None) -> bool:
    return proc_state(pid) == "T"


def descendants(pid: int) -> list[int]:
    """The processes ``pid`` started, and theirs, in the order found (``/proc/PID/task/*/children``):
    the child processes of an ``exec:`` lease, which a pause of their worker stops with it."""
    found, todo = [], [pid]
    while todo:
        parent = todo.pop()
        try:
            tasks = os.listdir(f"/proc/{parent}/task")
        except OSError:
            continue
        for tid in tasks:
            try:
                with open(f"/proc/{parent}/task/{tid}/children") as f:
                    kids = [int(k) for k in f.read().split()]
            except (OSError, ValueError):
                continue
            for k in kids:
                if k not in found:
                    found.append(k)
                    todo.append(k)
    return found
