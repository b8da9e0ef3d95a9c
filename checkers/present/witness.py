"""The first foreign release as a timeline a person can read (the incident's table form: time, one column per worker, the key).

Columns: the time (s since run start), one column per involved attempt — A, the remover; B, the
victim; C, a third attempt that claimed the key after the removal while B's job still ran, if
any — and "The key in the store". Rows only for what matters: A claims; A's claim expires (if it
did); B claims; A's command removes B's claim; C claims. Store times are converted to history
times with the store clock; job starts and ends come from the history.

When faults acted, what the nemesis did is in the same timeline: a "Nemesis" column and a row for
each fault start and end inside the witness's time span (and the start of one already acting at
its first row), and a worker held stopped by a pause fault reads "paused (SIGSTOP)", not "still
working".
"""
from __future__ import annotations

from dataclasses import dataclass

from leasecheck.checkers.model.claims import Claim, ClaimsResult
from leasecheck.checkers.model.clock import StoreClock
from leasecheck.checkers.measures.fault_windows import FaultWindows
from leasecheck.checkers.read.jobs import JobRun
from leasecheck.rundir import AUDIT


@dataclass
class Witness:
    key: str
    columns: list[str]                       # header cells, time first, the key last
    rows: list[tuple[float, list[str]]]      # (time in s, cells after the time)
    summary: str

    def to_markdown(self) -> str:
        """A heading, the summary, and the timeline as a Markdown table."""
        lines = [f"## Foreign release on `{self.key}`", "", self.summary, "",
                 "| " + " | ".join(self.columns) + " |",
                 "|" + "---|" * len(self.columns)]
        lines += ["| " + " | ".join([f"{t:.3f}"] + cells) + " |" for t, cells in self.rows]
        return "\n".join(lines) + "\n"

    def to_dict(self) -> dict:
        return {"kind": "foreign_release", "key": self.key, "columns": list(self.columns), "summary": self.summary,
                "rows": [{"time_s": round(t, 3), "cells": list(cells)} for t, cells in self.rows]}


def build_witness(result: ClaimsResult, jobs: dict[str, JobRun], clock: StoreClock,
                  which: int = 0, faults: FaultWindows | None = None, audit: str = AUDIT) -> Witness | None:
    """The timeline of foreign release number `which` (the first by default) in `result`; None
    when there is no such one. `faults`: the run's faults, to show what the nemesis did; `audit`:
    the file whose line numbers `result` gives (a node's own audit in a run of several)."""
    if which >= len(result.foreign):
        return None
    fr = result.foreign[which]
    victim, a, b = fr.victim, fr.remover, fr.victim.owner
    same_key = [c for c in result.claims if (c.db, c.obj) == (victim.db, victim.obj)]
    mine = [c for c in same_key if c.owner == a and c.line < fr.line]
    a_claim = mine[-1] if mine else None
    c_claim = _walk_in(result, fr, jobs, clock)
    names = {a: "A", b: "B"} | ({c_claim.owner: "C"} if c_claim else {})
    actors = list(names)
    events: list[tuple[int, dict[str, str], str]] = []

    def deadline(claim: Claim) -> str:
        ms = claim.deadline_ms
        return "no deadline" if ms is None else f"deadline {_ns(clock, ms / 1000) / 1e9:.3f}"

    if a_claim is not None:
        events.append((_ns(clock, a_claim.created), {a: "wins the conditional create, starts the job"},
                       f"A's claim, {deadline(a_claim)}"))
        if a_claim.fate in ("expired_while_held", "expired_after_job"):
            events.append((_ns(clock, a_claim.ended), {}, "absent: A's deadline passed"))
        elif a_claim.fate in _LOST and a_claim.ended is not None and a_claim.ended < fr.time:
            events.append((_ns(clock, a_claim.ended), {}, _LOST[a_claim.fate]))
    events.append((_ns(clock, victim.created), {b: "wins its own conditional create, starts the same job"},
                   f"B's claim, {deadline(victim)}"))
    verb, key_after = _REMOVAL.get(fr.how, (fr.how, f"B's claim, {fr.how} by A"))
    events.append((_ns(clock, fr.time), {a: f"{fr.command} {verb} B's claim"}, key_after))
    if c_claim is not None:
        events.append((_ns(clock, c_claim.created),
                       {c_claim.owner: "wins the conditional create: a third worker walks in"},
                       f"C's claim, {deadline(c_claim)}"))
    columns = ["Time (s)"] + [f"Worker {names[x]} ({_label(x, a)})" for x in actors] + ["The key in the store"]
    rows = timeline(events, actors, jobs, faults)
    if len(rows[0][1]) > len(actors) + 1:
        columns.append("Nemesis")
    summary = (f"Attempt {a}'s {fr.command} ({audit} line {fr.line}) {fr.how} the claim of attempt "
               f"{b} on `{victim.name}` at {_ns(clock, fr.time) / 1e9:.3f} s")
    summary += f"; then {c_claim.owner} claimed the key while {b}'s job was still running." if c_claim else "."
    if faults and a_claim is not None and a_claim.fate == "expired_while_held" and a_claim.ended is not None:
        pause = faults.pause_of(a, _ns(clock, a_claim.ended))
        if pause is not None:
            summary += (f" A's claim ran out at {_ns(clock, a_claim.ended) / 1e9:.3f} s while a fault held A "
                        f"stopped (SIGSTOP, {pause.start / 1e9:.3f}–{pause.end / 1e9:.3f} s): A was paused "
                        "past its deadline.")
    return Witness(victim.name, columns, rows, summary)


def _walk_in(result: ClaimsResult, fr, jobs: dict[str, JobRun], clock: StoreClock) -> Claim | None:
    """The first claim made on the key after foreign release `fr` while its victim's job was
    still running: a third worker walking in."""
    victim, b_job = fr.victim, jobs.get(fr.victim.owner)
    if b_job is None:
        return None
    return next((c for c in result.claims
                 if (c.db, c.obj) == (victim.db, victim.obj) and c.line > fr.line
                 and c.owner not in (fr.remover, victim.owner)
                 and b_job.running_at(_ns(clock, c.created))), None)


def walk_ins(result: ClaimsResult, jobs: dict[str, JobRun], clock: StoreClock) -> int:
    """How many foreign releases let another attempt claim while the victim still worked."""
    return sum(_walk_in(result, fr, jobs, clock) is not None for fr in result.foreign)


_REMOVAL = {  # how (from claims) -> (A's verb, the key afterwards)
    "deleted": ("deletes", "absent: A deleted B's claim"),
    "deleted (expiry set in the past)": ("expires", "absent: A expired B's claim"),
    "overwritten": ("overwrites", "A's value: A overwrote B's claim"),
    "expiry shortened": ("shortens the expiry of", "B's claim, its expiry cut short by A"),
}


_LOST = {  # A's claim gone without a command of anyone's (a fault), as the key column says it
    "evicted": "absent: the store evicted A's claim (found gone here)",
    "lost_in_restart": "absent: the store restarted empty",
}


def _label(attempt: str, a: str) -> str:
    """`w2.s0.5`, noting when it is A's own slot coming back for another attempt."""
    same = attempt != a and attempt.rsplit(".", 1)[0] == a.rsplit(".", 1)[0]
    return f"{attempt}, A's next attempt" if same else attempt


def _ns(clock: StoreClock, store_s: float) -> int:
    return clock.to_history_ns(store_s)


def timeline(events: list[tuple[int, dict[str, str], str]], actors: list[str],
             jobs: dict[str, JobRun], faults: FaultWindows | None = None) -> list[tuple[float, list[str]]]:
    """Rows (time in s, cells) from `events` — (history ns, {actor: what it did}, the key's state)
    — one cell per actor, then the key; with `faults` that acted in the span, a row for each of
    their starts and ends and a last "Nemesis" cell on every row."""
    events = sorted(events, key=lambda e: e[0])
    acts = faults.rows(events[0][0], events[-1][0]) if faults and events else []
    # Fault times are kept to the millisecond: within one, a fault's end goes before what the
    # actors did (a resumed worker acts only after SIGCONT) and a fault's start after it.
    merged = ([(t, 1, said, key, "") for t, said, key in events]
              + [(t, 2 if what_starts else 0, {}, "", what) for t, what, what_starts in acts])
    merged.sort(key=lambda e: (round(e[0] / 1e6), e[1]))
    return [(t / 1e9, [said.get(x) or _status(jobs.get(x), t, x, faults) for x in actors] + [key]
             + ([nemesis] if acts else [])) for t, _, said, key, nemesis in merged]


def _status(job: JobRun | None, t: int, attempt: str | None = None, faults: FaultWindows | None = None) -> str:
    if job is None or t < job.start:
        return "—"
    if not job.running_at(t):
        return "done"
    return "paused (SIGSTOP)" if faults and faults.pause_of(attempt, t) is not None else "still working"
