"""The terminal summary of a checked run: each verdict in plain words, the diagnosis (why claims
were lost, from the measured causes), the faults that acted (requested against measured), the
liveness rows (`liveness`), then the witness and the verdict — overall, then safety and liveness
side by side."""
from __future__ import annotations

from pathlib import Path

from rich.console import Console
from rich.markdown import Markdown
from rich.markup import escape
from rich.table import Table

from leasecheck.checkers.measures.hazards import hazard_words, missed_sentence, verdict_suffix
from leasecheck.checkers.present import fault_report, node_report
from leasecheck.checkers.present.diagnosis import diagnose
from leasecheck.harness.reports import liveness
from leasecheck.rundir import RESULTS

_VERDICT = {True: "[bold green]VALID[/]", False: "[bold red]INVALID[/]"}
STORE_VERDICT = "[bold magenta]INVALID (store)[/]"
STORE_WORDS = ("the store broke the promise every lease makes — a finding about the store's configuration "
               "or its faults, not about the lease")


def _causes(causes: dict) -> str:
    said = [f"{name.replace('_', ' ')} {n}" for name, n in causes.items() if n]
    return f"; caused by: {', '.join(said)}" if said else ""


def print_summary(console: Console, result: dict, run_dir: Path) -> None:
    overlap = result.get("overlap") or {}
    reuse = result.get("token_reuse") or {}
    table = Table(show_header=False, box=None, padding=(0, 2))
    cut = result.get("interrupted")
    if cut:
        planned = cut.get("planned_s")
        of = f" of the planned {planned:g} s" if isinstance(planned, (int, float)) else ""
        table.add_row("[bold yellow]cut short[/]",
                      f"[bold yellow]{escape(str(cut.get('reason')))} after {cut.get('actual_s', 0):.1f} s{of}[/]"
                      f" — {escape(str(cut.get('detail', '')))}; the rest of the run was not tested, so it "
                      "cannot be VALID")
    fr = result.get("foreign_releases", 0)
    table.add_row("foreign releases",
                  f"[red]{fr}[/] — a worker's release removed another attempt's claim"
                  + (f"; {result.get('walk_ins', 0)} time(s) another attempt then claimed the key while "
                     "the victim still worked (a third worker walked in)" if result.get("walk_ins") else "")
                  if fr
                  else "0 — no release removed another attempt's claim")
    table.add_row("overlap",
                  f"{overlap.get('count', 0)} job runs overlapped another run of the same key; "
                  f"{overlap.get('rate', 0.0):.1%} of busy time had >= 2 holders; "
                  f"max concurrency {overlap.get('max_concurrency', 0)}"
                  + (" (a third worker walked in)" if overlap.get("max_concurrency", 0) >= 3 else "")
                  + _causes(overlap.get("causes") or {}))
    me = result.get("mutual_exclusion")
    if me:
        table.add_row("mutual exclusion",
                      f"[red]{me['violations']} pair(s) of attempts held the lock at once[/] ({me['holds']} won "
                      f"acquires on {len(me['nodes'])} masters)" if me.get("violations") else
                      f"held — {me['holds']} won acquires on {len(me['nodes'])} masters, no two at once")
    if result.get("failover"):
        table.add_row("failover", _failover(result))
    brain = result.get("split_brain")
    if isinstance(brain, dict):
        off = brain.get("off_primary", 0)
        table.add_row("split brain",
                      f"[red]{brain['count']} claim(s) won on a node that was no longer the primary while "
                      f"another attempt held the key on the primary[/]" if brain.get("count") else
                      f"no claim won on a former primary while the key was held on the primary"
                      + (f" ({off} claim(s) created off the primary, none acknowledged against a live holder)"
                         if off else ""))
    if reuse.get("tokens"):
        table.add_row("reused tokens", f"[red]{reuse['attempts']} attempts shared {reuse['tokens']} "
                      f"token value(s)[/] — a holder token must be fresh per attempt")
    nothing = result.get("releases_found_nothing", 0)
    table.add_row("releases that found nothing",
                  f"{nothing} ({result.get('releases_found_nothing_rate', 0.0):.1%} of releases) — "
                  + ("their claim was gone before the release (see the diagnosis)"
                     if nothing else "every release found its own claim")
                  + _found_nothing(result.get("releases_found_nothing_outcomes") or {}, nothing,
                                   result.get("releases_found_nothing_first") or []))
    table.add_row("diagnosis", "\n".join(escape(x) for x in result.get("diagnosis") or diagnose(result)))
    stale = result.get("stale_effects")
    if stale and stale.get("without_fence") is not None:
        fence = ("no fencing token to check" if stale.get("with_fence") is None else
                 f"{stale['with_fence']} got past the fence ({stale['turned_away_by_fence']} turned away)")
        unsure = f" ({stale['undecided']} undecided)" if stale.get("undecided") else ""
        table.add_row("stale effects", f"{stale['without_fence']} of {stale['effects']} effects were "
                      f"written without a live claim{unsure}; {fence}")
    claims = result.get("claims") or {}
    seen = result.get("claims_seen")
    if claims or seen:
        fates = ", ".join(f"{k.replace('_', ' ')} {v}" for k, v in claims.items() if v)
        where = (f"{seen['count']} seen in the store on {seen['keys']} key(s), e.g. "
                 f"{escape(', '.join(seen['examples']))}" if seen and seen.get("count") else
                 "[yellow]none seen in the store[/]" if seen is not None else "")
        table.add_row("claims", "; ".join(x for x in (where, fates) if x))
    if result.get("exceptions") is not None:
        table.add_row("exceptions", _exceptions(result["exceptions"]))
    table.add_row("faults", _faults(result))
    liveness.rows(table, result)
    if isinstance(result.get("hazards"), dict):
        table.add_row("hazards", escape(hazard_words(result["hazards"])))
    per_node = node_report.lines(result)
    if per_node:
        table.add_row("nodes", "\n".join(escape(x) for x in per_node))
    audit = result.get("audit") or {}
    table.add_row("evidence", f"{result.get('ops', 0)} lease calls over {result.get('duration_s', 0):.1f}s; "
                  + ("store audit complete" if audit.get("complete") else
                     "store audit present but cut short" if audit.get("present") else "no store audit"))
    console.print(table)
    for line in result.get("disagreements", [])[:5]:
        console.print(f"[yellow]disagreement:[/] {escape(line)}")
    for f in result.get("faults", []):
        if f.get("took_effect") is not True:
            said = "did not take effect" if f.get("took_effect") is False else "not shown to have taken effect"
            console.print(f"[red]fault {f['n']} {f['fault']}:{f['target']} {said}:[/] {f.get('why')}")
    for f in result.get("faults_not_fired", []):
        console.print(f"[red]fault {f['n']} {f['fault']}:{f['target']} did not fire:[/] {f['why']}")
    problems = result.get("problems", [])
    for line in problems[:3]:
        console.print(f"[yellow]note:[/] {escape(line)}")
    if len(problems) > 3:
        console.print(f"[yellow]note:[/] {len(problems) - 3} more in {RESULTS}")
    witness = result.get("witness") or {}
    if witness.get("markdown"):
        if console.is_terminal:
            console.print(Markdown(witness["markdown"]))
        else:   # a log: the Markdown itself, one line per table row, as witness.md has it
            console.print(witness["markdown"].rstrip("\n"), markup=False, highlight=False, soft_wrap=True)
    for line in result.get("warnings") or []:
        console.print(f"[yellow]warning (liveness, --liveness warn):[/] {escape(line)}")
    both = liveness.verdicts(result, _VERDICT)
    if both:
        console.print(both)
    console.print(verdict_line(result), soft_wrap=True)   # one line, to read or grep in a log
    console.print(f"results: {run_dir / RESULTS}")


def verdict_line(result: dict) -> str:
    """``VALID ...``, ``VALID — but no release was in flight at an expiry: ...`` (a relevant
    hazard the run never reached, said first), ``INVALID ...``, or ``INVALID (store) ...`` (only
    the store broke the lease's promise: a finding about its configuration, not the lease)."""
    reasons = list(result.get("reasons", []))
    valid = result.get("valid")
    if valid is True:
        suffix = verdict_suffix(result.get("hazards"))
        missed = {missed_sentence(n) for n in (result.get("hazards") or {}).get("missed") or []}
        rest = "; ".join(r for r in reasons if r not in missed)
        return f"{_VERDICT[True]}{escape(suffix)}{'; ' if suffix and rest else ' ' if rest else ''}{escape(rest)}"
    if valid is False and result.get("failure_of") == "store":
        return (f"{STORE_VERDICT} {escape(STORE_WORDS)}: " + escape("; ".join(reasons))).rstrip()
    verdict = _VERDICT.get(valid, "[bold yellow]INCONCLUSIVE[/]")
    return f"{verdict} {escape('; '.join(reasons))}".rstrip()


def _exceptions(seen: dict) -> str:
    """What the lease raised, by type, and the first (`exceptions` of results.json)."""
    if not seen.get("count"):
        return "none raised by the lease"
    kinds = ", ".join(f"{n} {escape(t)}" for t, n in (seen.get("by_type") or {}).items())
    first = seen.get("first") or {}
    where = "its constructor" if first.get("in") == "constructor" else f"{first.get('in')}()"
    said = f"{first.get('type')}: {first.get('message')}" if first.get("message") else str(first.get("type"))
    return (f"[yellow]{seen['count']} raised by the lease[/] ({kinds}); first {escape(said)} in {where}, "
            f"attempt {escape(str(first.get('attempt')))} at {first.get('time_s')} s")


def _faults(result: dict) -> str:
    """One line per fault: what and when, requested vs measured, and whether it took effect."""
    rows = fault_report.lines(result)
    if not rows:
        return "none injected"
    out = []
    for what, numbers, judged in rows:
        mark = f" — [red]{escape(judged)}[/]" if judged.startswith("did not") else f" — {judged}" if judged else ""
        out.append(f"{escape(what)}: {escape(numbers)}{mark}")
    return "\n".join(out)


def _found_nothing(outcomes: dict, total: int, first: list) -> str:
    """'; the key was absent 6, another attempt held it 3; first: w3.s0.17 on job:0 at 2.345 s'
    (two of the three outcomes of a checked release, and the job the first one was for)."""
    words = {"key_absent": "the key was absent", "token_differs": "another attempt held it",
             "unknown": "undecided"}
    parts = [f"{words[k]} {outcomes[k]}" for k in words if outcomes.get(k)]
    text = f"; {', '.join(parts)}" if total and parts else ""
    if first:
        f = first[0]
        text += f"; first: {f['attempt']} on {f['key']} at {f['time_s']:.3f} s"
    return text


def _failover(result: dict) -> str:
    """The failover line (`node_report.failover_line`), what was lost in red."""
    return node_report.failover_line(result, lambda said: f"[red]{said}[/]") or ""
