"""`report.html` of one run directory, built from its stored files only (config.json,
results.json, witness.json and timeline.json — what the check gathered of the history for it in
its one pass, `checkers.measures.timeline`): the summary of each verdict, the timeline, the plots
and the witnesses, in one file that opens offline (the script, the style and the drawing data
are inline; no network). A run never checked (killed before its check), or one whose history
changed since, has no usable timeline.json: its history is then read once, here, by the
checker's own digest."""
from __future__ import annotations

import json
import re
from pathlib import Path

from markdown_it import MarkdownIt
from markupsafe import Markup

from leasecheck.checkers.measures.hazards import hazard_words
from leasecheck.checkers.present import node_report
from leasecheck.checkers.read.history import HistoryStream
from leasecheck.checkers.read.rundir import load_config
from leasecheck.harness.rundirs.runs import VERDICTS

from leasecheck.harness.reports.html import liveness
from leasecheck.harness.reports.html.timeline import timeline_of
from leasecheck.harness.reports.html.render import render
from leasecheck.events import RUN_START
from leasecheck.rundir import AUDIT, REPORT, RESULTS, WITNESS_JSON, node_audit, read_json, read_object

_MD = MarkdownIt("js-default")        # tables on, raw HTML off: the witness text is escaped
_REMOVER = re.compile(r"Worker A \(([^,)]+)")
# which witness heading shows the violation a reason names
_REASON_WORDS = {"Foreign release": "foreign release", "Reused holder token": "token",
                 "Early loss": "lost before the lease's deadline", "Claim lost in failover": "lost in failover",
                 "Mutual exclusion": "mutual exclusion violated", "Stuck claim": "stuck claim",
                 "Claim kept alive by another attempt": "kept alive by another attempt"}


def write_report(run_dir, timeline: dict | None = None) -> Path:
    """Write ``run_dir/report.html`` (atomically) and return its path. `timeline`: what the check
    just gathered (`check_run`'s ``timeline``); else ``timeline.json``, or the history read once.
    Raises `HistoryError` when the run has no history at all."""
    run = Path(run_dir).resolve()          # results/latest: named by the run it points to
    config, _ = load_config(run, lambda: HistoryStream(run).scan(RUN_START.encode())[:1])
    results = read_object(run / RESULTS)
    witnesses = _sections(_witnesses(run, results))
    d = timeline if timeline is not None else timeline_of(run, config, results)
    reasons = [(r, _witness_of(r, witnesses)) for r in (results or {}).get("reasons") or []]
    html = render("report.html.j2", run=run, config=config, results=results, reasons=reasons,
                  verdict=_verdict(results), witnesses=witnesses, summary=_summary(results),
                  verdicts=liveness.verdicts(results), hung=liveness.hung(results),
                  nodes=node_report.lines(results or {}), lost=_lost_in_failover(results),
                  data=json.dumps(_data(d, results, witnesses), separators=(",", ":")).replace(
                      "<", "\\u003c"),   # no "</script>" or "<!--" inside
                  digest=_Drawn(d, results))
    out = run / REPORT
    tmp = run / (REPORT + ".tmp")
    tmp.write_text(html, encoding="utf-8")
    tmp.replace(out)
    return out


def _verdict(results: dict | None) -> str:
    if results is None:
        return "NOT CHECKED"
    if results.get("valid") is False and results.get("failure_of") == "store":
        return "INVALID (store)"      # only the store broke the lease's promise (results.json failure_of)
    return VERDICTS.get(results.get("valid"), "INCONCLUSIVE")


def _witnesses(run: Path, results: dict | None) -> list[dict]:
    """Every witness timeline the checker wrote: witness.json, else the one in results.json."""
    stored = read_json(run / WITNESS_JSON)
    if isinstance(stored, list) and stored:
        return [w for w in stored if isinstance(w, dict)]
    results = results or {}
    return [w for w in [results.get("witness")] + (results.get("witnesses") or []) if isinstance(w, dict)]


def _sections(witnesses: list[dict]) -> list[dict]:
    """Each witness timeline (one per "## " heading of the checker's Markdown) as HTML, with the
    attempt whose command removed a claim when it is a foreign release (to link its mark)."""
    out = []
    for w in witnesses:
        for part in re.split(r"(?m)^## ", w.get("markdown") or ""):
            if not part.strip():
                continue
            title, _, body = part.partition("\n")
            remover = _REMOVER.search(body) if title.startswith("Foreign release") else None
            out.append({"title": Markup(_MD.renderInline(title.strip())), "body": Markup(_MD.render(body)),
                        "remover": remover.group(1).strip() if remover else None})
    return out


def _witness_of(reason: str, sections: list[dict]) -> int | None:
    """The index of the witness timeline that shows the violation `reason` names, if any."""
    for i, w in enumerate(sections):
        words = next((v for k, v in _REASON_WORDS.items() if str(w["title"]).startswith(k)), None)
        if words and words in reason:
            return i
    return None


def _summary(results: dict | None) -> list[tuple[str, str, str]]:
    """(property, verdict word, what was measured) rows: each verdict in plain words."""
    if results is None:
        return []
    r = results
    cert = r.get("certainty") or {}
    overlap = r.get("overlap") or {}
    reuse = r.get("token_reuse") or {}
    stale = r.get("stale_effects") or {}
    early = r.get("early_loss") or {}
    fr = int(r.get("foreign_releases") or 0)

    def word(bad: bool, key: str | None = None) -> str:
        if bad:
            return "INVALID"
        return "unknown" if key and str(cert.get(key, "")).startswith("unknown") else "held"

    rows = [("foreign releases", word(fr > 0, "foreign_releases"),
             f"{fr} release(s) removed another attempt's claim; {r.get('walk_ins', 0)} walk-in(s)"
             f" ({cert.get('foreign_releases', '')})"),
            ("overlap", "measured", f"{overlap.get('count', 0)} job run(s) overlapped; "
             f"{float(overlap.get('rate') or 0):.1%} of busy time with >= 2 holders; max concurrency "
             f"{overlap.get('max_concurrency', 0)}"),
            ("releases that found nothing", "measured" if r.get("releases_found_nothing") else "held",
             f"{r.get('releases_found_nothing', 0)} ({float(r.get('releases_found_nothing_rate') or 0):.1%} of releases)"),
            ("token reuse", word(bool(reuse.get("tokens"))), f"{reuse.get('attempts', 0)} attempt(s) "
             f"shared {reuse.get('tokens', 0)} token value(s)"),
            ("early loss", "measured", f"{early.get('count', 0)} claim(s) lost before their deadline"),
            ("stale effects", "measured", f"{stale.get('without_fence', 0) or 0} of {stale.get('effects', 0) or 0} "
             "effect(s) written without a live claim"
             + (f" ({stale['undecided']} undecided)" if stale.get("undecided") else ""))]
    hazards = r.get("hazards")
    if isinstance(hazards, dict):
        rows.append(("hazards", "not all reached" if hazards.get("missed") else "measured", hazard_words(hazards)))
    if r.get("failure_of") == "store":
        rows[rows.index(next(x for x in rows if x[0] == "early loss"))] = (
            "early loss", "INVALID (store)", f"{early.get('count', 0)} claim(s) lost before their deadline: "
            "the store broke the promise every lease makes (its configuration or its faults, not the lease)")
    failover = node_report.failover_line(r)
    if failover is not None:
        early_failover = ((early.get("by_cause") or {}).get("failover") or 0) > 0
        rows.insert(1, ("failover", "INVALID" if early_failover else "measured", failover))
    rows += liveness.rows(r)
    cut = r.get("interrupted")
    if cut:
        rows.insert(0, ("run", "cut short", f"{cut.get('reason')} after {float(cut.get('actual_s') or 0):.1f} s: "
                                            f"{cut.get('detail', '')}"))
    return rows


def _lost_in_failover(results: dict | None) -> list[dict]:
    """The claims lost in failover a replicated run lists (``failover.examples``), as table rows."""
    return [{"attempt": x.get("attempt"), "key": x.get("key"), "where": f"{x.get('node')} -> {x.get('promoted')}",
             "created_s": x.get("created_s"), "held_until_s": x.get("held_until_s"),
             "newcomer": (f"{x['newcomer']} won it at {x.get('newcomer_won_s')} s" if x.get("newcomer") else "none")}
            for x in ((results or {}).get("failover") or {}).get("examples") or []]


class _Drawn:
    """What the page says in words of the timeline: its counts, and the history's problems that
    results.json does not already list."""

    def __init__(self, d: dict, results: dict | None) -> None:
        listed = set((results or {}).get("problems") or [])
        self.events, self.run_end, self.marks_dropped = d["events"], d["run_end"], d["marks_dropped"]
        self.keys, self.lanes = d["keys"], d["lanes"]
        self.problems = [p for p in d.get("problems") or [] if p not in listed]
        self.open_at_end = any(lane["open"] for lane in d["lanes"])


def _data(d: dict, results: dict | None, witnesses: list[dict]) -> dict:
    """What the page's script draws: the timeline, with a mark for each foreign release the
    checker named (linked to its witness timeline)."""
    linked: dict[str, int] = {}
    for i, w in enumerate(witnesses):
        if w["remover"]:
            linked.setdefault(w["remover"], i)
    marks = list(d["marks"])
    lane_of = {lane["name"]: i for i, lane in enumerate(d["lanes"])}
    for f in (results or {}).get("foreign_releases_first") or []:
        lane = lane_of.get(str(f.get("attempt", "")).rsplit(".", 1)[0])
        if lane is None:
            continue
        mark = {"lane": lane, "t": float(f.get("time_s") or 0), "kind": "foreign",
                "text": f"{f.get('attempt')}: {f.get('command')} removed the claim of {f.get('victim')} "
                        f"on {f.get('key')} ({node_audit(f['node']) if f.get('node') else AUDIT} "
                        f"line {f.get('line')})"}
        if f.get("attempt") in linked:
            mark["href"] = f"#witness-{linked[f.get('attempt')]}"
        marks.append(mark)
    return {k: v for k, v in d.items() if k not in ("events", "problems", "history_bytes")} | {"marks": marks}
