"""The process side of ``leasecheck shrink``: what a failing run directory recorded, each
candidate carried out as a real run, and the result written as a scenario file.

Shrinking reads only the run directory: ``config.json`` (the configuration, seed included),
``schedule.json`` (the faults planned) and the verdict, re-checked from the same files (its
history read once) for the properties it violated and the faults that fired (its ``faults``: a
``fault_start`` per step). Each
candidate is that configuration with the candidate's faults as an explicit schedule (no random
nemesis), its workers and time limit; its runs go to ``RUN_DIR/shrink/``, so ``results/latest``
and the run's own scenario list are left alone.

What a replay repeats of the recorded configuration, and what the written scenario's ``[run]``
says, come from ``RunConfig``'s declarations (``Setting.shrink``: ``config.shrink_kept``,
``config.shrink_scenario_fields``): every setting ``--replay`` repeats (the topology and its node
counts included) but the random nemesis a candidate's explicit schedule replaces; never the
ports or run id.
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from leasecheck.harness.settings.config import RunConfig, defaults, settings, shrink_kept, shrink_scenario_fields
from leasecheck.harness.settings.durations import parse_distribution
from leasecheck.checkers.errors import CheckError
from leasecheck.harness.errors import LeasecheckError, StoreError, UsageError
from leasecheck.harness.faults import Step
from leasecheck.harness.run.host import SERVERS, default_store_bin
from leasecheck.harness.run.preflight import preflight
from leasecheck.harness.run.runner import Run
from leasecheck.harness.settings.replay import config_values, schedule_steps
from leasecheck.harness.settings.scenario import load_scenario
from leasecheck.harness.settings.scenario_dump import dump
from leasecheck.harness.search.shrink import Candidate, Fault, Replayed, Trial, changes
from leasecheck.rundir import CONFIG, HISTORY, RunFiles

WORDS = {True: "VALID", False: "INVALID"}
CRASHED = 255      # a replay's exit code when the harness could not carry it out (the store did not start)


@dataclass(frozen=True)
class Recorded:
    """A failing run, as its directory recorded it."""
    run_dir: Path
    cfg: RunConfig                   # the recorded configuration, ready to replay
    faults: tuple[Fault, ...]        # the steps that fired, numbered as in schedule.json
    not_fired: tuple[Step, ...]      # planned, but the run ended first
    violated: frozenset[str]         # the properties it violated (``leasecheck.checkers.properties`` names)
    reasons: tuple[str, ...]

    @property
    def candidate(self) -> Candidate:
        return Candidate(self.faults, self.cfg.workers, self.cfg.time_limit_s)

    @property
    def tail_s(self) -> float:
        """Kept after a candidate's last fault: a lease lifetime and the longest job, and a second
        (a holder paused past its lease wakes, finishes its job and deletes within that)."""
        return round(self.cfg.ttl_s + parse_distribution(self.cfg.job_duration).max_s + 1.0, 3)


def read_run(run_dir: Path, check: Callable[[Path, list], dict]) -> Recorded:
    """The recorded run, or ``UsageError`` naming the fix: not a run directory, not finished,
    not failing. ``check(run_dir, parts)`` judges it again (and fills ``parts``)."""
    run_dir = Path(run_dir)
    said = f"{run_dir}"
    if not run_dir.is_dir():
        raise UsageError(f"{said}: no such run directory; pass results/<scenario>/<time> or results/latest")
    files = RunFiles(run_dir)
    if not files.config.is_file():
        raise UsageError(f"{said}: no {CONFIG} there; pass a run directory such as results/latest")
    if not files.history.is_file():
        raise UsageError(f"{said}: no {HISTORY}, the run did not finish; run `leasecheck check {run_dir}` "
                         "first (a killed run), or pass a finished run")
    old = config_values(run_dir, shrink_kept(), "shrink")
    planned = schedule_steps(run_dir, "shrink")
    parts: list = []
    result = check(run_dir, parts)       # the one read of its history: the faults that fired are the check's
    fired = {f["n"] for f in result.get("faults") or [] if isinstance(f, dict) and isinstance(f.get("n"), int)}
    if result.get("valid") is not False:
        word = WORDS.get(result.get("valid"), "INCONCLUSIVE")
        raise UsageError(f"{said}: the run did not fail ({word}); shrink needs an INVALID run, such as "
                         "the one `leasecheck hunt` finds")
    cfg = RunConfig.from_json(old)
    steps = [Step.from_json(s) for s in planned]
    return Recorded(
        run_dir=run_dir, cfg=cfg,
        faults=tuple(Fault(n, s) for n, s in enumerate(steps) if n in fired),
        not_fired=tuple(s for n, s in enumerate(steps) if n not in fired),
        violated=frozenset(name for name, part in parts if part.valid is False),
        reasons=tuple(result.get("reasons") or ()))


def candidate_config(rec: Recorded, cand: Candidate, results_dir: Path) -> RunConfig:
    return rec.cfg.with_(workers=cand.workers, time_limit_s=cand.time_limit_s,
                         schedule=[f.step.to_json() for f in cand.faults], nemesis=None,
                         results_dir=str(results_dir))


def replayer(rec: Recorded, check: Callable[[Path, list], dict], any_violation: bool = False,
             results_dir: Path | None = None) -> Callable[[Candidate], Replayed]:
    """``replay(candidate)``: one real run of the candidate, judged. It *failed* when it is
    INVALID and violates a property the recorded run violated (or any, with ``any_violation``):
    a smaller schedule that breaks something else is a different bug, not this one made small."""
    results_dir = results_dir or rec.run_dir / "shrink"

    def replay(cand: Candidate) -> Replayed:
        t = time.monotonic()
        plan = preflight(candidate_config(rec, cand, results_dir), schedule_from=f"the shrink of {rec.run_dir}")
        runner = Run(plan, log=lambda *a, **k: None)
        parts: list = []
        try:
            run_dir = runner.execute()
            result = check(run_dir, parts)
        except (StoreError, CheckError) as e:   # one replay that could not run is not a verdict
            return Replayed(failed=False, exit_code=CRASHED, run_dir=runner.run_dir,
                            elapsed_s=time.monotonic() - t, reason=f"could not run: {e}")
        code = {True: 0, False: 1}.get(result.get("valid"), 2)
        violated = {name for name, part in parts if part.valid is False}
        failed = code == 1 and (any_violation or bool(violated & rec.violated))
        return Replayed(failed=failed, exit_code=code, run_dir=run_dir, elapsed_s=time.monotonic() - t,
                        interrupted=runner.end_reason == "interrupted",
                        reason=next(iter(result.get("reasons") or []), ""))
    return replay


def write_scenario(rec: Recorded, cand: Candidate, trial: Trial, path: Path, policy_text: str) -> list[str]:
    """Write ``cand`` as a scenario file at ``path``; returns the lines of what was removed. The
    file is read back: a scenario that would replay another schedule is an error, not a result."""
    removed = changes(rec.candidate, cand, list(rec.not_fired))
    cfg = rec.cfg.with_(workers=cand.workers, time_limit_s=cand.time_limit_s)
    run = {field: getattr(cfg, field) for field in shrink_scenario_fields()}
    name = f"{cfg.scenario}-shrunk"
    steps = [f.step for f in cand.faults]
    comment = "\n".join([f"Shrunk by `leasecheck shrink` from {rec.run_dir}",
                         f"({len(rec.faults)} fault(s), {rec.cfg.workers} worker(s), {rec.cfg.time_limit_s:g} s):",
                         f"failed in {trial.rate()} replays ({policy_text}).",
                         "Removed:"] + [f"  {line}" for line in removed]
                        + ["", f"The recorded run: {rec.reasons[0] if rec.reasons else ''}"])
    text = dump(name, run, steps, comment=comment,
                description=f"{cand.describe()}, shrunk from {rec.cfg.scenario}")
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    values, back = load_scenario(path)
    if back != [s.to_json() for s in steps] or values.get("workers") != cand.workers:
        raise LeasecheckError(f"{path}: the written scenario does not read back as the shrunk schedule")
    return removed


def command_flags(rec: Recorded) -> list[str]:
    """Flags for the kept settings a scenario cannot say (the store's backend, image, address,
    binary, the proxy, the audit), each one not at its default, so the printed command runs the
    scenario as the replays ran it: valued options first, then switches turned on, then off."""
    cfg, carried = rec.cfg, set(shrink_scenario_fields()) | {"name"}
    valued, on, off = [], [], []
    for field in shrink_kept():
        setting, value = settings()[field], getattr(cfg, field)
        if field in carried or not setting.flag or value == defaults()[field] or value is None:
            continue
        if field == "store_bin" and not _own_store_bin(cfg):
            continue
        if setting.kind is bool:
            (on if value else off).append(setting.flag if value else f"--no-{setting.flag[2:]}")
        else:
            valued += [setting.flag, str(value)]
    return valued + on + off


def _own_store_bin(cfg: RunConfig) -> bool:
    """The recorded binary is the user's, not the one the preflight filled in for ``--server``."""
    return cfg.backend == "embedded" and not cfg.store_url and \
        Path(cfg.store_bin).resolve() != Path(SERVERS.get(cfg.server, default_store_bin)() or "").resolve()
