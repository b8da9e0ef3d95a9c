"""Job runs from the history: `job_start`..`job_end` per attempt.

A job without `job_end` (the worker died or the run was cut short) has `end` None: it is taken to
run until the end of the history by whoever needs an end.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(slots=True)
class JobRun:
    attempt: str
    key: str
    start: int
    end: int | None = None
    aborted: bool = False

    def running_at(self, t: int) -> bool:
        """True if the job had started and not yet ended at history time `t`."""
        return self.start <= t and (self.end is None or t < self.end)


def job_runs(events: list[dict]) -> tuple[dict[str, JobRun], list[str]]:
    """Return `({attempt: JobRun}, problems)`."""
    runs: dict[str, JobRun] = {}
    problems: list[str] = []
    for e in events:
        kind, attempt = e.get("type"), e.get("attempt")
        if kind == "job_start":
            if attempt in runs:
                problems.append(f"history #{e.get('index')}: second job_start of {attempt} ignored")
            else:
                runs[attempt] = JobRun(attempt, e.get("key"), e["time"])
        elif kind == "job_end":
            run = runs.get(attempt)
            if run is None or run.end is not None:
                problems.append(f"history #{e.get('index')}: job_end of {attempt} without an open "
                                "job_start ignored")
            else:
                run.end, run.aborted = e["time"], bool(e.get("aborted"))
    return runs, problems
