"""Was the run cut short? Decided from the history alone, so `leasecheck check` on a stored run
says the same as the run that wrote it.

A run tested only what happened while its workers claimed. One that stopped before its planned
time (`time_limit_s` in the run_start config) — Ctrl-C or SIGTERM, a worker or slot that died,
a harness killed outright — tested less than it was asked to, so it can never be VALID: a CI job
killed by its own timeout must not show green. It is recorded as `interrupted`:

    {"reason": "SIGINT", "planned_s": 30.0, "actual_s": 3.5, "detail": "..."}

where `actual_s` is how long every worker claimed (until the harness began stopping, or until
the first worker or slot that ended early). Sources, in the history:

- `run_end`: `reason` (`time-limit`, `interrupted`, `worker-crashed`, `error`, `unwritable`, `part-died`), `signal` (the
  signal's name when interrupted) and `stopped_at` (history ns when the harness began to stop);
  no `run_end` after a `run_start` means the harness itself was killed;
- `worker_end` / `slot_crash` before the planned time: a worker or one of its slots stopped early
  (workers stop claiming at the planned time and only end after it).
"""
from __future__ import annotations

from leasecheck.events import RUN_END, RUN_START, SLOT_CRASH, TYPE, WORKER_END, WORKER_START

# A worker ends only after the planned time; this much earlier still counts as on time
# (timestamps of different processes are read microseconds apart, never this far).
EARLY_NS = 50_000_000


class RunSpan:
    """Feed `run_start`, `run_end`, `worker_start`, `worker_end` and `slot_crash` events in
    history order; `interrupted()` says whether the run was cut short."""

    def __init__(self) -> None:
        self.started = False
        self.end: dict | None = None           # the run_end event
        self.pids: dict[int, str] = {}        # worker pid -> "w3" (from worker_start)
        self.early: list[tuple[int, str, str]] = []   # (time, who, what) of ends before the plan
        self._ends: list[tuple[int, str, str]] = []

    def feed(self, e: dict) -> None:
        kind = e.get(TYPE)
        if kind == RUN_START:
            self.started = True
        elif kind == RUN_END:
            self.end = e
        elif kind == WORKER_START:
            if isinstance(e.get("pid"), int):
                self.pids[e["pid"]] = str(e.get("process"))
        elif kind == WORKER_END:
            why = f" ({e['reason']})" if e.get("reason") else ""
            self._ends.append((e["time"], str(e.get("process")), f"ended{why}"))
        elif kind == SLOT_CRASH:
            self._ends.append((e["time"], str(e.get("process")), f"crashed ({e.get('error', '?')})"))

    def interrupted(self, config: dict | None, last_ns: int) -> dict | None:
        """The `interrupted` record, or None for a run that ran its planned time. `config` is the
        run_start config (its `time_limit_s` is the plan); `last_ns` the history's last time."""
        if not self.started:
            return None   # not a run the harness recorded: nothing to compare with
        planned = (config or {}).get("time_limit_s")
        planned_ns = int(planned * 1e9) if isinstance(planned, (int, float)) else None
        early = sorted(x for x in self._ends
                       if planned_ns is not None and x[0] < planned_ns - EARLY_NS)
        end = self.end
        if end is None:
            if planned_ns is None:
                return None   # a hand-made history without run_end or a plan: nothing to compare
            reason, at = "harness-killed", last_ns
            detail = "the history has no run_end: the harness was killed before it could stop the run"
        elif end.get("reason") not in (None, "time-limit"):
            reason = end.get("signal") or end.get("reason")
            at = end.get("stopped_at") if isinstance(end.get("stopped_at"), int) else end["time"]
            detail = {"interrupted": f"the harness got {reason} and stopped the workers",
                      "worker-crashed": "a worker process exited with an error and the harness stopped the run",
                      "error": "the harness failed and stopped the run",
                      "unwritable": "the run directory stopped taking writes (out of disk, or read-only) "
                                    "and the harness stopped the run",
                      "part-died": "a part of the run (its store or its proxy) died under it and the harness "
                                   "stopped the run"}.get(end.get("reason"),
                                                                          f"run_end reason {end.get('reason')!r}")
        elif early:
            t, who, what = early[0]
            reason, at = "worker-ended-early", t
            detail = f"{who} {what} at {t / 1e9:.3f} s, before the planned end"
        else:
            return None
        if early and early[0][0] < at:
            t, who, what = early[0]
            at, detail = t, detail + f"; {who} had {what} at {t / 1e9:.3f} s"
        if planned_ns is not None and at >= planned_ns - EARLY_NS:
            return None   # stopped at or after the planned time: nothing was left untested
        return {"reason": reason, "planned_s": planned, "actual_s": round(at / 1e9, 3), "detail": detail}


def sentence(cut: dict) -> str:
    """The verdict's reason for an interrupted run, in plain words."""
    planned = cut.get("planned_s")
    of = f" of the planned {planned:g} s" if isinstance(planned, (int, float)) else ""
    return (f"the run was cut short ({cut['reason']}) after {cut['actual_s']:.1f} s{of}: {cut['detail']}; "
            "what would have happened in the rest of the run was not tested, so it cannot be VALID")
