"""The Python API, re-exported by ``leasecheck``: run a lease under faults and check it, check a
stored run, hunt with fresh seeds, shrink a failure, run a matrix — the same pipeline the command
line uses (`leasecheck.harness.run.pipeline`), with settings as keywords.

For example::

    import leasecheck

    result = leasecheck.run(lease="naive-del", nemesis=["pause:holder"], workers=4, time_limit="10s")
    assert result.valid is False and result.foreign_releases > 0
    print(result.witness)

Settings are the ``leasecheck run`` options as keywords (``ttl="1s"``, ``job_duration=...``,
``topology="redlock"``; see `leasecheck.harness.settings.keywords`); a lease is a built-in name, a
``"FILE.py:Class"`` string or a class defined at the top level of an importable module. Bad input
raises `UsageError` before anything starts; a harness that cannot carry out a run raises
`LeasecheckError`. Every function writes run directories under ``results_dir`` (default
``results``) as the command line does. Calls are silent; the ``leasecheck`` logger hears what the
command line would print as notes.
"""
from __future__ import annotations

import contextlib
import logging
import sys
import sysconfig
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable

from leasecheck.harness.errors import LeasecheckError, UsageError
from leasecheck.harness.run.pipeline import check_and_save, run_and_check
from leasecheck.harness.run.preflight import Plan, preflight
from leasecheck.harness.run.runner import Run
from leasecheck.harness.search import matrix as matrix_cells
from leasecheck.harness.search import cluster as cluster_pool
from leasecheck.harness.search import incident
from leasecheck.harness.search import matrix_table
from leasecheck.harness.search.hunt import (EXIT_UNKNOWN, Outcome, Tally, check_budget, hunt_parallel, nemesis_for,
                                            short_for_default)
from leasecheck.harness.search.hunt import hunt as hunt_loop
from leasecheck.harness.search.pool import Done, LocalPool, Pool
from leasecheck.harness.search.task import Job
from leasecheck.harness.search.shrink import Policy, Search
from leasecheck.harness.search.shrink_run import Recorded, command_flags, read_run, replayer, write_scenario
from leasecheck.harness.settings.config import LIVENESS, RunConfig
from leasecheck.harness.settings.keywords import config_from
from leasecheck.harness.settings.scenario import convert
from leasecheck.result import Result
from leasecheck.rundir import REPLAYS_DIR, SHRUNK

log = logging.getLogger("leasecheck")


def _log(*args, **_kwargs) -> None:
    log.info(" ".join(str(a) for a in args))


def import_path() -> list[str]:
    """This process's own import directories (a test's root, a script's folder), so the worker
    processes import a caller's lease class just as the caller did; the interpreter's own
    directories are left out (a child finds those itself, in their usual order)."""
    own = {sysconfig.get_path(name) for name in ("stdlib", "platstdlib", "purelib", "platlib")}
    # "" on the path is the working directory (``python -c``, an interactive session): the
    # workers start elsewhere, so it goes by its name.
    return [str(Path(p or ".").resolve()) for p in sys.path if Path(p or ".").is_dir() and p not in own]


def _plan(options: dict, scenario=None, replay=None) -> Plan:
    cfg, given = config_from(options, scenario=scenario, replay=replay)
    origin = str(scenario) if scenario else f"replay={replay}" if replay else "the schedule"
    plan = preflight(cfg, schedule_from=origin, given=given)
    for note in plan.notes:
        log.info("note: %s", note)
    return plan


def _seconds(value, key: str) -> float:
    return convert(value, "duration", f"{key}={value!r}", key)


def run(lease="token-cas", nemesis: str | Iterable[str] | None = None, *, scenario: Path | str | None = None,
        replay: Path | str | None = None, **options) -> Result:
    """Run ``lease`` against a store the harness starts, under ``nemesis`` (fault names as
    ``--nemesis`` takes them: ``["pause:holder", "latency"]`` or ``"pause:holder,latency"``), and
    check it. ``scenario``: a scenario file whose settings and events the keywords override;
    ``replay``: a past run directory to repeat (its seed and exact fault timeline).

    For example::

        result = leasecheck.run(lease="token-cas", nemesis=["pause:holder"], time_limit="10s")
        assert result.valid is True and result.foreign_releases == 0
    """
    if lease is not None:
        options["lease"] = lease
    if nemesis is not None:
        options["nemesis"] = list(nemesis) if not isinstance(nemesis, str) else nemesis
    plan = _plan(options, scenario, replay)
    result, _ = run_and_check(plan, log=_log, worker_path=import_path(), on_note=_log)
    return result


def check(run_dir: Path | str, *, all_witnesses: bool = False, liveness: str | None = None) -> Result:
    """Check a stored run directory again (``leasecheck check``): the verdict from its history and
    audit alone, written back as its ``results.json`` and report. ``liveness``: ``"fail"`` or
    ``"warn"`` instead of the run's own setting.

    For example::

        result = leasecheck.check("results/latest")
        print(result.verdict, result.reasons)
    """
    run_dir = Path(run_dir)
    if not run_dir.is_dir():
        raise UsageError(f"{run_dir}: no such run directory; pass results/<scenario>/<time> or results/latest")
    if liveness is not None and liveness not in LIVENESS:
        raise UsageError(f"liveness={liveness!r}: give one of {', '.join(map(repr, LIVENESS))}, e.g. liveness=\"warn\"")
    return check_and_save(run_dir, all_witnesses=all_witnesses, on_note=_log, liveness=liveness)


def hunt(lease="token-cas", nemesis: str | Iterable[str] | None = None, *, budget: float | str = "10m",
         scenario: Path | str | None = None, replay: Path | str | None = None,
         on_run: Callable[[Tally], None] = lambda tally: None, parallel: int = 1, cluster: str | None = None,
         incident_replays: int = 3, until_hazards: int | None = None, **options) -> Tally:
    """Run the same configuration with fresh seeds (from ``seed=`` up, if given) until a run is
    INVALID or the ``budget`` (seconds or ``"10m"``) could not hold another run. Returns the
    `Tally`: ``failing`` (the first INVALID run's `Outcome`, with its ``result``), ``runs``,
    ``exit_code`` (1 when one failed, 2 when some run was inconclusive, else 0).
    ``parallel``: runs at once on this machine; ``cluster``: ``"local:N"`` or a Dask scheduler's
    address (`leasecheck.harness.search.cluster`). A failing run is replayed ``incident_replays``
    times and gets an ``incident.md`` (0: neither). Without ``nemesis``, ``scenario`` or ``replay``
    the runs use the ``default`` fault mix (``nemesis="none"``: no faults); ``until_hazards=N`` also
    stops once every hazard relevant to the lease was reached N times.

    For example::

        tally = leasecheck.hunt(lease="naive-del", budget="2m", time_limit="10s")
        if tally.failing:
            print(tally.failing.seed, tally.failing.run_dir)
    """
    if lease is not None:
        options["lease"] = lease
    defaulted = not nemesis and scenario is None and replay is None
    nemesis = nemesis_for(nemesis if isinstance(nemesis, str) or nemesis is None else list(nemesis), scenario, replay)
    if nemesis is not None:
        options["nemesis"] = nemesis
    if until_hazards is not None and not (isinstance(until_hazards, int) and until_hazards >= 1):
        raise UsageError(f"until_hazards={until_hazards!r}: give a count of at least 1, e.g. until_hazards=3")
    budget_s = _seconds(budget, "budget")
    cfg, given = config_from(options, scenario=scenario, replay=replay)
    if defaulted:
        cfg, short = short_for_default(cfg)
        if short:
            log.info("note: %s", short)
    origin = str(scenario) if scenario else f"replay={replay}" if replay else "the schedule"
    first = preflight(cfg, schedule_from=origin, given=given)     # bad input stops here, once
    for note in first.notes:
        log.info("note: %s", note)
    check_budget(budget_s, first.cfg, "budget=")
    check_parallel(parallel, cluster, first.cfg, "parallel=", "cluster=")
    check_incident_replays(incident_replays, "incident_replays=")
    with open_pool(parallel, cluster) as pool:
        if pool is None:
            tally = hunt_loop(first.cfg, budget_s, hunt_runner(first.cfg, replay or scenario), on_run=on_run,
                              tally=Tally(until_hazards=until_hazards))
        else:
            tally = hunt_parallel(cfg.with_(seed=first.cfg.seed), budget_s,
                                  PoolRuns(pool, origin, import_path()), on_run=on_run,
                                  tally=Tally(until_hazards=until_hazards))
        if tally.failing is not None and incident_replays:
            incident_report(tally, "leasecheck.hunt(...)", incident_replays, pool)
    return tally


def check_parallel(parallel, cluster: str | None, cfg: RunConfig, said_parallel: str = "--parallel",
                   said_cluster: str = "--cluster") -> None:
    """Bad input before anything starts: runs at once need a store, ports and names of their own."""
    if isinstance(parallel, bool) or not isinstance(parallel, int) or parallel < 1:
        raise UsageError(f"{said_parallel} {parallel}: run at least 1 at a time, e.g. {said_parallel} 2")
    if parallel > 1 or cluster:
        how = f"{said_cluster} {cluster}" if cluster else f"{said_parallel} {parallel}"
        if cfg.store_url:
            raise UsageError(f"{how} with --store-url: runs at once would share one store and its keys; "
                             f"leave out --store-url (each run starts its own store)")
        if cfg.store_port:
            raise UsageError(f"{how} with --store-port {cfg.store_port}: runs at once cannot share one port; "
                             f"leave out --store-port (each run takes a free one)")
    if cluster:
        cluster_pool.check_spec(cluster)


def check_incident_replays(n, said: str = "--incident-replays") -> None:
    if isinstance(n, bool) or not isinstance(n, int) or n < 0:
        raise UsageError(f"{said} {n}: replay a failing run 0 or more times for its incident report, e.g. {said} 3")


@contextlib.contextmanager
def open_pool(parallel: int = 1, cluster: str | None = None):
    """The pool for ``--parallel N`` / ``--cluster SPEC``, closed (every run stopped) at the end;
    None for one run at a time."""
    pool: Pool | None = (cluster_pool.ClusterPool(cluster, parallel if parallel > 1 else None) if cluster
                         else LocalPool(parallel) if parallel > 1 else None)
    try:
        yield pool
    finally:
        if pool is not None:
            pool.close()


def outcome_of(seed: int, done: Done) -> Outcome:
    """A hunt's `Outcome` from a pool's `Done`, as `hunt_runner` makes it from a run in this process.
    A run whose process or host was lost is "not run": inconclusive, never a verdict."""
    if done.lost:
        return Outcome(seed=seed, run_dir=done.run_dir, exit_code=EXIT_UNKNOWN, reason=f"not run: {done.lost}",
                       elapsed_s=done.elapsed_s)
    if done.error:
        raise LeasecheckError(f"seed {seed}: {done.error}" + (f" (run directory {done.run_dir})" if done.run_dir else ""))
    result = Result.load(done.run_dir)
    return Outcome(seed=seed, run_dir=result.run_dir, exit_code=result.exit_code,
                   near_misses=result.releases_found_nothing + result.overlap.count, reason=result.reason,
                   elapsed_s=done.elapsed_s, interrupted=done.end_reason == "interrupted", result=result,
                   parts=done.parts)


class PoolRuns:
    """`hunt.Runs` over a `Pool`: each seed's run a `Job` planned where it runs."""

    def __init__(self, pool: Pool, origin: str, worker_path: list[str], parts: bool = False):
        self.pool, self.origin, self.worker_path, self.parts = pool, origin, worker_path, parts
        self.seeds: dict[str, int] = {}

    def free(self) -> int:
        return self.pool.free

    def running(self) -> int:
        return self.pool.running

    def start(self, index: int, cfg: RunConfig) -> None:
        self.seeds[str(index)] = cfg.seed
        self.pool.submit(Job(str(index), cfg=cfg, origin=self.origin, worker_path=self.worker_path, parts=self.parts))

    def next(self) -> tuple[int, Outcome]:
        done = self.pool.next()
        return int(done.key), outcome_of(self.seeds[done.key], done)

    def stop(self, index: int) -> None:
        self.pool.stop(str(index))


def hunt_runner(cfg: RunConfig, origin=None, watch=None, parts: bool = False) -> Callable[[RunConfig], Outcome]:
    """``run_once(seeded_cfg)`` for the hunt loop: plan, run and check one seed (``parts``: keep each
    property's result of that one check, for JUnit)."""
    said = str(origin) if origin else "the schedule"

    def run_once(seeded: RunConfig) -> Outcome:
        t = time.monotonic()
        plan = preflight(seeded, schedule_from=said)
        kept: list | None = [] if parts else None
        result, runner = run_and_check(plan, log=lambda *a, **k: None, watch=watch, worker_path=import_path(),
                                       parts=kept)
        return Outcome(seed=plan.cfg.seed, run_dir=result.run_dir, exit_code=result.exit_code,
                       near_misses=result.releases_found_nothing + result.overlap.count,
                       reason=result.reason, elapsed_s=time.monotonic() - t,
                       interrupted=runner.end_reason == "interrupted", result=result, parts=kept)
    return run_once


def incident_report(tally: Tally, command: str, replays: int = 3, pool: Pool | None = None) -> Path:
    """Replay the hunt's failing run ``replays`` times (under ``RUN_DIR/replays``; on ``pool``, at
    once, when there is one) and write its ``incident.md``; returns the file's path."""
    bad = tally.failing
    failing = bad.result or Result.load(bad.run_dir)
    found = incident.Found(command=command, run_number=tally.runs.index(bad) + 1, hunt_elapsed_s=tally.elapsed_s,
                           machine=matrix_cells.machine(),
                           when=time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()))
    cfg, given = config_from({"results_dir": str(Path(bad.run_dir) / REPLAYS_DIR)}, replay=bad.run_dir)
    plans = [preflight(cfg, schedule_from=f"replay={bad.run_dir}", given=given) for _ in range(replays)]
    done: dict[int, tuple] = {}
    if pool is None:
        for n, plan in enumerate(plans):
            result, _ = run_and_check(plan, worker_path=import_path())
            done[n] = (result.run_dir, result, "")
    else:
        waiting = list(enumerate(plans))
        while waiting or pool.running:
            while waiting and pool.free > 0:
                n, plan = waiting.pop(0)
                pool.submit(Job(f"replay-{n}", plan=plan, worker_path=import_path()))
            d = pool.next()
            n = int(d.key.split("-")[1])
            if d.lost or d.error:
                done[n] = (d.run_dir, None, f"not run: {d.lost}" if d.lost else f"CRASHED: {d.error}")
            else:
                done[n] = (d.run_dir, Result.load(d.run_dir), "")
    rel = Path(bad.run_dir)
    with contextlib.suppress(ValueError):
        rel = rel.relative_to(Path.cwd())
    return incident.write(failing, [done[n] for n in sorted(done)], found, incident.replay_command(rel))


@dataclass
class Shrunk:
    """What `shrink` found: ``scenario`` (the file written, or None when nothing failed),
    ``removed`` (what was taken out, in words), ``flags`` (what the scenario cannot say, for the
    command that runs it), ``search`` (every candidate and replay) and the exit code (0 a smaller
    failing scenario, 1 nothing smaller failed, 2 nothing failed the vote)."""
    recorded: Recorded
    search: Search
    policy: str
    scenario: Path | None = None
    removed: list[str] = field(default_factory=list)
    flags: list[str] = field(default_factory=list)

    @property
    def exit_code(self) -> int:
        return self.search.exit_code


def shrink_plan(run_dir: Path | str, *, budget: float | str = "10m", replays: int = 3, must_fail: int = 2,
                any_violation: bool = False, said_budget: str = "--budget") -> Shrunk:
    """Read a failing run and set up the search (nothing runs yet); `Shrunk.search.run()` runs it.
    ``said_budget``: how the caller wrote the budget, for its error (the command line's flag or
    its environment variable)."""
    budget_s = _seconds(budget, "budget")
    if not budget_s > 0:
        raise UsageError(f"{said_budget} {budget_s:g}s: the budget must be greater than 0, e.g. --budget 10m")
    if not isinstance(replays, int) or replays < 1:
        raise UsageError(f"--replays {replays}: replay each candidate at least once (e.g. --replays 3)")
    if not isinstance(must_fail, int) or not 1 <= must_fail <= replays:
        raise UsageError(f"--must-fail {must_fail}: between 1 and --replays {replays} (e.g. --must-fail 2)")

    def judged(d: Path, parts: list) -> dict:
        return check_and_save(d, parts=parts).to_json()
    rec = read_run(Path(run_dir), judged)
    what = "any violation" if any_violation else f"INVALID with {' or '.join(sorted(rec.violated))}"
    policy_text = f"{what} in {must_fail} of {replays} replays"
    policy = Policy(replays=replays, must_fail=must_fail, budget_s=budget_s, tail_s=rec.tail_s, slots=rec.cfg.slots)
    search = Search(rec.candidate, policy, replayer(rec, judged, any_violation))
    return Shrunk(recorded=rec, search=search, policy=policy_text, flags=command_flags(rec))


def shrink_finish(shrunk: Shrunk, out: Path | str | None = None) -> Shrunk:
    """Write the smallest failing candidate of a finished search as a scenario file."""
    found = shrunk.search.result
    if found is not None:
        path = Path(out) if out is not None else shrunk.recorded.run_dir / SHRUNK
        shrunk.removed = write_scenario(shrunk.recorded, found.candidate, found, path, shrunk.policy)
        shrunk.scenario = path
    return shrunk


def shrink(run_dir: Path | str, *, budget: float | str = "10m", replays: int = 3, must_fail: int = 2,
           any_violation: bool = False, out: Path | str | None = None) -> Shrunk:
    """From a failing run directory, search for a smaller configuration that still fails (fewer
    and shorter faults, fewer workers, a shorter time limit; each candidate voted ``must_fail`` of
    ``replays`` real replays) and write it as a scenario file (default ``RUN_DIR/shrunk.toml``).

    For example::

        shrunk = leasecheck.shrink("results/latest", budget="5m")
        print(shrunk.scenario, shrunk.removed)
    """
    shrunk = shrink_plan(run_dir, budget=budget, replays=replays, must_fail=must_fail, any_violation=any_violation)
    shrunk.search.run()
    return shrink_finish(shrunk, out)


@dataclass
class Matrix:
    """What `matrix` ran: one `Cell` per lease and fault mix, the exit code (1 when a cell is
    INVALID, else 2 when one is not VALID, else 0) and the table files written."""
    cells: list
    exit_code: int
    seed: int
    table_md: Path | None = None
    table_html: Path | None = None


def matrix_plans(leases: Iterable[str] | str | None = None, nemesis: Iterable[str] | str | None = None,
                 **options) -> list[tuple[str, str, Plan]]:
    """Plan every cell (lease x fault mix) before any runs, one seed for all: bad input stops here."""
    rows = matrix_cells.split_list([leases] if isinstance(leases, str) else list(leases or ()), "--lease") \
        or list(matrix_cells.DEFAULT_LEASES)
    columns = matrix_cells.mixes([nemesis] if isinstance(nemesis, str) else list(nemesis or ())) \
        or list(matrix_cells.DEFAULT_MIXES)
    plans = []
    for lease in rows:
        for mix in columns:
            cfg, given = config_from(dict(options, lease=lease, nemesis=matrix_cells.nemesis_of(mix)))
            plan = preflight(cfg, given=given)
            options["seed"] = plan.cfg.seed      # drawn once, then the same in every cell
            plans.append((lease, mix, plan))
    return plans


def matrix_cell(lease: str, mix: str, plan: Plan, watch=None) -> tuple[matrix_cells.Cell, bool]:
    """Run and check one cell; returns (the cell, whether the matrix must stop: Ctrl-C/SIGTERM)."""
    runner: Run | None = None

    def watching(r: Run):
        nonlocal runner
        runner = r
        return watch(r) if watch is not None else contextlib.nullcontext()
    try:
        result, runner = run_and_check(plan, log=_log, watch=watching, worker_path=import_path())
    except KeyboardInterrupt:
        return matrix_cells.Cell(lease, mix, matrix_cells.NOT_RUN, runner.run_dir if runner else None), True
    except Exception as e:   # one cell's harness failing does not lose the others
        return matrix_cells.Cell(lease, mix, matrix_cells.CRASHED, runner.run_dir if runner else None,
                                 reason=f"{type(e).__name__}: {e}"), False
    return matrix_cells.cell_from_result(lease, mix, result), runner.end_reason == "interrupted"


def matrix_write(cells: list, plans: list, command: str) -> Matrix:
    """The table of a finished matrix, as Markdown and HTML in the results directory."""
    code = matrix_cells.exit_code(cells)
    seed = plans[0][2].cfg.seed
    header = matrix_table.Header(command=command, when=time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
                                 machine=matrix_cells.machine(), seed=seed, exit_code=code)
    md, page = matrix_table.write(cells, header, Path(plans[0][2].cfg.results_dir),
                                  time.strftime("%Y%m%dT%H%M%SZ", time.gmtime()))
    return Matrix(cells=cells, exit_code=code, seed=seed, table_md=md, table_html=page)


def matrix_parallel(plans: list, pool: Pool, on_cell: Callable[[int, matrix_cells.Cell], None] = lambda n, c: None
                    ) -> list:
    """Run the cells on ``pool``, as many at once as it has slots; the cells come back in the plans'
    order, each as the sequential matrix would have made it (a cell whose process or host was lost:
    NOT RUN, with why). Ctrl-C, or a cell interrupted, stops the cells going and starts no more."""
    cells: list = [None] * len(plans)
    nxt, stopping = 0, False
    while True:
        try:
            while not stopping and nxt < len(plans) and pool.free > 0:
                pool.submit(Job(str(nxt), plan=plans[nxt][2], worker_path=import_path()))
                nxt += 1
            if not pool.running:
                break
            done = pool.next()
        except KeyboardInterrupt:
            if stopping or not pool.running:
                raise
            stopping = True
            pool.stop_all()
            continue
        n = int(done.key)
        lease, mix, _ = plans[n]
        cells[n] = cell_of(lease, mix, done)
        on_cell(n, cells[n])
        if done.end_reason == "interrupted" and not stopping:
            stopping = True
            pool.stop_all()
    return [c if c is not None else matrix_cells.Cell(lease, mix, matrix_cells.NOT_RUN)
            for c, (lease, mix, _) in zip(cells, plans)]


def cell_of(lease: str, mix: str, done: Done) -> matrix_cells.Cell:
    """A matrix cell from a pool's `Done`, as `matrix_cell` makes it from a run in this process."""
    if done.lost:
        return matrix_cells.Cell(lease, mix, matrix_cells.NOT_RUN, done.run_dir, reason=f"not run: {done.lost}")
    if done.error:
        return matrix_cells.Cell(lease, mix, matrix_cells.CRASHED, done.run_dir, reason=done.error)
    return matrix_cells.cell_from_result(lease, mix, Result.load(done.run_dir))


def matrix(leases: Iterable[str] | str | None = None, nemesis: Iterable[str] | str | None = None,
           *, parallel: int = 1, cluster: str | None = None, **options) -> Matrix:
    """Every lease under every fault mix (each ``nemesis`` entry one column, ``"none"`` for no
    faults), each cell an ordinary run with the same seed; writes the table next to the runs.
    ``parallel``: cells at once on this machine; ``cluster``: ``"local:N"`` or a Dask scheduler's
    address. The table and the exit code are the same either way.

    For example::

        m = leasecheck.matrix(["naive-del", "token-cas"], ["none", "pause:holder"], time_limit="10s")
        print([(c.lease, c.mix, c.verdict) for c in m.cells])
    """
    plans = matrix_plans(leases, nemesis, **options)
    check_parallel(parallel, cluster, plans[0][2].cfg, "parallel=", "cluster=")
    with open_pool(parallel, cluster) as pool:
        if pool is not None:
            return matrix_write(matrix_parallel(plans, pool), plans, "leasecheck.matrix(...)")
    cells = []
    for n, (lease, mix, plan) in enumerate(plans, 1):
        cell, stop = matrix_cell(lease, mix, plan)
        cells.append(cell)
        if stop:
            cells += [matrix_cells.Cell(le, mx, matrix_cells.NOT_RUN) for le, mx, _ in plans[n:]]
            break
    return matrix_write(cells, plans, "leasecheck.matrix(...)")


__all__ = ["Matrix", "Shrunk", "check", "hunt", "matrix", "run", "shrink"]
