"""``incident.md``: a failing seed of ``hunt`` as a report ready to paste into an issue tracker.

Written into the failing run's directory once the hunt has replayed the run (``--incident-replays``,
3 by default): what was run (the commit or the package version, the configuration, the seed, the
fault mix it drew), what went wrong (the time of the first violation, the first witness), how to see
it again (the replay command) and how often it does (the replays that failed the same way: INVALID
with a violation of a kind the failing run had).

Nothing here runs anything: `markdown` and `reproduced` read checked `Result`\\ s.
"""
from __future__ import annotations

import json
import shlex
import subprocess
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

import leasecheck
from leasecheck.result import Result
from leasecheck.rundir import INCIDENT, RunFiles
# A run's violations, by kind, from its counts (``first_violation`` names the first one's kind).
KINDS = (("foreign_releases", "foreign_release"), ("token_reuse", "token_reuse"), ("early_loss", "early_loss"))
SHOWN = ("lease", "workers", "slots", "ttl_s", "job_duration", "time_limit_s", "nemesis", "nemesis_interval_s",
         "topology", "nodes", "server", "server_version", "backend", "seed")


@dataclass(frozen=True)
class Found:
    """What the hunt knows of its failing run besides the run itself."""
    command: str                 # the command (or API call) that hunted
    run_number: int              # the failing run's place in the hunt (1 = the first)
    hunt_elapsed_s: float        # from the hunt's start to the failing run's verdict
    machine: str                 # "x86_64, 2 cores, Python 3.11.7"
    when: str                    # "2026-12-02 00:44 UTC"


def commit() -> str:
    """``git rev-parse HEAD`` of the checkout leasecheck runs from (``+ uncommitted changes`` when
    its tree differs), else the installed package's version."""
    source = Path(leasecheck.__file__).resolve().parent
    try:
        head = subprocess.run(["git", "-C", str(source), "rev-parse", "HEAD"], capture_output=True, text=True,
                              timeout=10)
        if head.returncode == 0 and head.stdout.strip():
            dirty = subprocess.run(["git", "-C", str(source), "status", "--porcelain", "--untracked-files=no"],
                                   capture_output=True, text=True, timeout=10).stdout.strip()
            return f"{head.stdout.strip()}" + (" + uncommitted changes" if dirty else "")
    except (OSError, subprocess.SubprocessError):
        pass
    try:
        return f"leasecheck {metadata.version('leasecheck')} (not a git checkout)"
    except metadata.PackageNotFoundError:
        return "leasecheck (version unknown; not a git checkout)"


def kinds(result: Result) -> set[str]:
    """The kinds of violation a result shows."""
    found = {kind for count, kind in KINDS if result.data.get(count)}
    first = result.data.get("first_violation") or {}
    if first.get("kind"):
        found.add(first["kind"])
    return found


def reproduced(failing: Result, replay: Result | None) -> bool:
    """A replay reproduces the failure when it is INVALID with a violation of a kind the failing run had."""
    return replay is not None and replay.valid is False and bool(kinds(replay) & kinds(failing))


def _rel(path: Path | None, base: Path) -> str:
    if path is None:
        return "—"
    try:
        return Path(path).resolve().relative_to(base.resolve()).as_posix()
    except ValueError:
        return str(path)


def _cell(text) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def markdown(failing: Result, replays: list[tuple[Path | None, Result | None, str]], found: Found,
             replay_command: str) -> str:
    """The report. ``replays``: (run directory, its result or None, what happened when it has no
    result) per replay, in order."""
    run_dir = Path(failing.run_dir)
    files = RunFiles(run_dir)
    config = json.loads(files.config.read_text(encoding="utf-8"))
    schedule = json.loads(files.schedule.read_text(encoding="utf-8")) if files.schedule.is_file() else []
    first = failing.data.get("first_violation") or {}
    what = first.get("kind", "violation").replace("_", " ")
    at = first.get("time_s")
    rate_n = sum(1 for _, r, _ in replays if reproduced(failing, r))
    rate = f"{rate_n} of {len(replays)} replays" + (f" ({100 * rate_n / len(replays):.0f} %)" if replays else "")
    lines = [f"# `{config.get('lease')}` INVALID: {what}" + (f" at {at:.3f} s" if at is not None else "")
             + f" (seed {config.get('seed')})", "",
             "| | |", "|---|---|",
             f"| Commit | `{commit()}` |",
             f"| Verdict | {_cell(failing.reason)} |",
             f"| Seed | {config.get('seed')} |",
             f"| Time to failure | " + (f"{at:.3f} s into the run (its first {what}); " if at is not None else "")
             + f"run {found.run_number} of the hunt, {found.hunt_elapsed_s:.0f} s after it started |",
             f"| Reproduced | {rate} (a replay reproduces it when INVALID with a violation of a kind this run had) |",
             f"| Found | {found.when} by `{_cell(found.command)}` |",
             f"| Machine | {found.machine} |", "",
             "## Replay", "", "```", replay_command, "```", ""]
    if replays:
        lines += ["| Replay | Verdict | Run directory |", "|---|---|---|"]
        for n, (d, r, why) in enumerate(replays, 1):
            verdict = (r.verdict + (" (reproduced)" if reproduced(failing, r) else "")) if r is not None else why
            lines.append(f"| {n} | {_cell(verdict)} | `{_rel(d, run_dir)}` |")
        lines.append("")
    lines += ["## Configuration", "", "| Setting | Value |", "|---|---|"]
    lines += [f"| `{k}` | `{_cell(json.dumps(config[k]))}` |" for k in SHOWN if config.get(k) not in (None, "", [])]
    lines += ["", "## Fault mix drawn", ""]
    if schedule:
        lines += ["| At (s) | Fault | Target | Duration (s) | Size |", "|---|---|---|---|---|"]
        lines += [f"| {s.get('at', 0):g} | {s.get('fault')} | {s.get('target') or '—'} | "
                  f"{s.get('duration') if s.get('duration') is not None else '—'} | "
                  f"{s.get('size') if s.get('size') is not None else '—'} |" for s in schedule]
    else:
        lines.append("No faults: the failure came from the jobs' own durations.")
    lines += ["", "## First witness", "", failing.witness.strip() or "(no witness timeline: see the reasons)", "",
              "<details><summary>config.json</summary>", "", "```json", json.dumps(config, indent=1), "```", "",
              "</details>", ""]
    return "\n".join(lines)


def write(failing: Result, replays, found: Found, replay_command: str) -> Path:
    path = Path(failing.run_dir) / INCIDENT
    path.write_text(markdown(failing, replays, found, replay_command), encoding="utf-8")
    return path


def replay_command(run_dir: Path) -> str:
    return f"leasecheck run --replay {shlex.quote(str(run_dir))}"
