"""One run of a hunt or a matrix, carried out in a process of its own: ``python -m
leasecheck.harness.search.task REPLY_FILE`` reads a pickled `Job` on its standard input, plans (a
hunt's seed) or takes the plan (a matrix cell), runs and checks it, and writes what became of it as
JSON to ``REPLY_FILE``: ``{"run_dir": ..., "end_reason": ..., "error": ...}``.

A process per run, not a thread: each run installs its own SIGINT/SIGTERM handlers (a signal stops
the run cleanly and keeps its history), owns its store, proxy and worker processes, and shares no
interpreter state with the runs beside it. The parent (`leasecheck.harness.search.pool`) reads the
verdict from the run directory's ``results.json``, as any reader of a run does.
"""
from __future__ import annotations

import contextlib
import json
import pickle
import sys
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

from leasecheck.harness.run.pipeline import run_and_check
from leasecheck.harness.run.preflight import Plan, preflight
from leasecheck.harness.settings.config import RunConfig


@dataclass(frozen=True)
class Job:
    """One run to carry out. ``plan``: a matrix cell, planned by the caller (every cell was checked
    before any started); else ``cfg`` (a hunt's seeded configuration), planned where it runs, as the
    sequential hunt plans each seed. ``key`` names the job to its caller (the seed, the cell)."""
    key: str
    plan: Plan | None = None
    cfg: RunConfig | None = None
    origin: str = "the schedule"              # where the schedule came from, for a planning error
    worker_path: list[str] = field(default_factory=list)
    parts: bool = False                       # reply with each property's own result too (for JUnit)

    def with_results_dir(self, results_dir: str) -> "Job":
        """The same job, writing its run directory under ``results_dir`` (a cluster host's own)."""
        if self.plan is not None:
            return replace(self, plan=replace(self.plan, cfg=self.plan.cfg.with_(results_dir=results_dir)))
        return replace(self, cfg=self.cfg.with_(results_dir=results_dir))


def carry_out(job: Job) -> dict:
    """Plan (if need be), run and check ``job`` in this process; what became of it, as JSON data.
    A run that started keeps its directory even when the harness failed (``error`` then says why).
    With ``job.parts``, ``parts`` is each property's `Part` as ``[name, fields]`` (the one check's)."""
    runner = None
    parts: list | None = [] if job.parts else None

    def watching(r):
        nonlocal runner
        runner = r
        return contextlib.nullcontext()
    try:
        plan = job.plan if job.plan is not None else preflight(job.cfg, schedule_from=job.origin)
        result, runner = run_and_check(plan, watch=watching, worker_path=job.worker_path, parts=parts)
    except Exception as e:   # the caller decides: a hunt stops (as a sequential one), a matrix cell is CRASHED
        return {"run_dir": str(runner.run_dir) if runner else None, "end_reason": "error",
                "error": f"{type(e).__name__}: {e}"}
    reply = {"run_dir": str(result.run_dir), "end_reason": runner.end_reason, "error": None}
    if parts is not None:
        reply["parts"] = [[name, asdict(part)] for name, part in parts]
    return reply


def main(argv: list[str]) -> int:
    job = pickle.loads(sys.stdin.buffer.read())
    sys.path[:0] = [p for p in job.worker_path if p not in sys.path]   # a caller's own lease module
    reply = carry_out(job)
    Path(argv[0]).write_text(json.dumps(reply), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
