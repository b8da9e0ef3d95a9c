"""Job runs from the history: `job_start`..`job_end` per attempt.

A job without `job_end` (the worker died or the run was cut short) has `end` None: it is taken to
run until the end of the history by whoever needs an end — except one whose attempt a
`worker_killed` event names (kill:holder): it ended there, `killed`.
"""
from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import Any

from leasecheck.events import JOB_END, JOB_START, TYPE, WORKER_KILLED


@dataclass(slots=True, init=False)
class JobRun:
    attempt: Any         # as the history names them (str in a well-formed one)
    key: Any
    start: Any           # history ns
    end: Any = None      # history ns, None while it runs
    aborted: bool = False
    killed: bool = False        # its worker was killed (kill:holder): it ended there, never released

    def __init__(self, attempt: Any, key: Any, start: Any, end: Any = None, aborted: bool = False,
                 killed: bool = False) -> None:
        # Written out: compiled, a dataclass's generated __init__ is interpreted Python (one per job run).
        self.attempt, self.key, self.start, self.end, self.aborted, self.killed = attempt, key, start, end, aborted, killed

    def running_at(self, t: Any) -> bool:
        """True if the job had started and not yet ended at history time `t`."""
        return self.start <= t and (self.end is None or t < self.end)


class JobTracker:
    """Feed events in history order; `runs` ({attempt: JobRun}) and `problems` grow as they come."""

    def __init__(self) -> None:
        self.runs: dict[Any, JobRun] = {}
        self.problems: list[str] = []

    def feed(self, e: dict) -> None:
        kind = e.get(TYPE)
        if kind == JOB_START:
            self.start(e.get("index"), e.get("attempt"), e.get("key"), e["time"])
        elif kind == JOB_END:
            self.end(e.get("index"), e.get("attempt"), e["time"], bool(e.get("aborted")))
        elif kind == WORKER_KILLED:
            for attempt in e.get("attempts") or []:
                run = self.runs.get(attempt)
                if run is not None and run.end is None:
                    run.end, run.aborted, run.killed = e["time"], True, True

    def start(self, index: Any, attempt: Any, key: Any, t: Any) -> None:
        """A ``job_start`` of `attempt` on `key` at `t` (`index`: the event's, for a problem's message)."""
        if attempt in self.runs:
            self.problems.append(f"history #{index}: second job_start of {attempt} ignored")
        else:
            self.runs[attempt] = JobRun(attempt, sys.intern(key) if isinstance(key, str) else key, t)

    def end(self, index: Any, attempt: Any, t: Any, aborted: bool) -> None:
        """A ``job_end`` of `attempt` at `t` (`index`: the event's, for a problem's message)."""
        run = self.runs.get(attempt)
        if run is None or run.end is not None:
            self.problems.append(f"history #{index}: job_end of {attempt} without an open "
                                 "job_start ignored")
        else:
            run.end, run.aborted = t, aborted


def job_runs(events) -> tuple[dict[str, JobRun], list[str]]:
    """Return `({attempt: JobRun}, problems)`."""
    t = JobTracker()
    for e in events:
        t.feed(e)
    return t.runs, t.problems
