"""`report.html` of one run directory, built from its stored files only (config.json,
history.jsonl or history.d/, results.json, witness.json): the summary of each verdict, the
timeline, the plots and the witnesses, in one file that opens offline (the script, the style and
the drawing data are inline; no network)."""
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
from leasecheck.harness.reports.html.digest import KINDS, OUTCOMES, Digest, digest
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


def write_report(run_dir) -> Path:
    """Write ``run_dir/report.html`` (atomically) and return its path. Raises `HistoryError`
    when the run has no history at all."""
    run = Path(run_dir).resolve()          # results/latest: named by the run it points to
    config, _ = load_config(run, lambda: HistoryStream(run).scan(RUN_START.encode())[:1])
    results = read_object(run / RESULTS)
    witnesses = _sections(_witnesses(run, results))
    d = digest(run, config, (results or {}).get("foreign_releases_first") or [])
    reasons = [(r, _witness_of(r, witnesses)) for r in (results or {}).get("reasons") or []]
    html = render("report.html.j2", run=run, config=config, results=results, reasons=reasons,
                  verdict=_verdict(results), witnesses=witnesses, summary=_summary(results),
                  verdicts=liveness.verdicts(results), hung=liveness.hung(results),
                  nodes=node_report.lines(results or {}), lost=_lost_in_failover(results),
                  data=json.dumps(_data(d, results, witnesses, str(config.get("key_prefix") or "")),
                    separators=(",", ":")).replace("<", "\\u003c"),   # no "</script>" or "<!--" inside
                  digest=d)
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
             "effect(s) written without a live claim")]
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


def _data(d: Digest, results: dict | None, witnesses: list[dict], key_prefix: str = "") -> dict:
    """What the page's script draws, bounded: runs of buckets, marks, plot points. Lanes in
    name order (w2.s0 before w10.s0)."""
    order = sorted(range(len(d.lanes)), key=lambda i: _natural(d.lanes[i].name))
    pos = {old: new for new, old in enumerate(order)}
    lw, pw = d.lane_grid.width, d.plot_grid.width
    n_lane = min(d.lane_grid.n, d.end_ns // lw + 1)
    n_plot = min(d.plot_grid.n, d.end_ns // pw + 1)
    linked: dict[str, int] = {}
    for i, w in enumerate(witnesses):
        if w["remover"]:
            linked.setdefault(w["remover"], i)
    marks = [dict(m, t=m["t"] / 1e9, lane=pos[m["lane"]]) for m in d.marks]
    lane_of = {lane.name: pos[i] for i, lane in enumerate(d.lanes)}
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
    return {
        "end_s": d.end_ns / 1e9,
        "lane_s": lw / 1e9,
        "lanes": [{"name": lane.name,
                   "held": _runs(_levels(lane.held, lw, n_lane)),
                   "overdue": _runs(_levels(lane.overdue, lw, n_lane)),
                   "job": _runs(_levels(lane.job, lw, n_lane)),
                   "rel": [[i, c] for i, c in enumerate(lane.releases[:n_lane]) if c],
                   "nothing": [[i, c] for i, c in enumerate(lane.nothing[:n_lane]) if c],
                   "unknown": [[i, c] for i, c in enumerate(lane.unknown[:n_lane]) if c],
                   "open": lane.open_at_end} for lane in (d.lanes[i] for i in order)],
        "marks": marks,
        "marks_dropped": d.marks_dropped,
        "keys": [{"key": k["key"], "short": k["key"][len(key_prefix):] if k["key"].startswith(key_prefix) else k["key"],
                  "holder": [[a, b, pos[v]] for a, b, v in _runs(k["who"][:n_lane], empty=-1)],
                  "jobs": _runs([3 if c3 else 2 if c2 else 1 if c1 else 0
                                 for c1, c2, c3 in zip(k["c1"][:n_lane], k["c2"][:n_lane], k["c3"][:n_lane])])}
                 for k in d.keys],
        "faults": [{"t0": f["t0"] / 1e9, "t1": f["t1"] / 1e9, "n": f["n"], "fault": f["fault"],
                    "target": f["target"], "processes": f["processes"], "healed": f["healed"]}
                   for f in d.faults],
        "plot_s": pw / 1e9,
        "latency": {f"{k}:{o}": [[round(t / 1e9, 4), round(ms, 3)] for s in d.latency[(k, o)][:n_plot]
                                 for t, ms in s.points()]
                    for k in KINDS for o in OUTCOMES if (k, o) in d.latency},
        "rate": {f"{k}:{o}": [round(c / (pw / 1e9), 2) for c in d.rate[(k, o)][:n_plot]]
                 for k in KINDS for o in OUTCOMES if (k, o) in d.rate},
        "run_end": d.run_end and {"reason": d.run_end["reason"], "t": d.run_end["t"] / 1e9},
    }


def _natural(name: str) -> list:
    return [int(p) if p.isdigit() else p for p in re.split(r"(\d+)", name)]


def _levels(values: list, width: int, n: int) -> list[int]:
    """Coverage in ns per bucket as 0 (none), 1 (a little), 2 (some), 3 (most of the bucket)."""
    return [0 if v <= 0 else 3 if v >= 0.75 * width else 2 if v >= 0.25 * width else 1 for v in values[:n]]


def _runs(values: list, empty=0) -> list[list[int]]:
    """[first bucket, last bucket + 1, value] for each run of equal non-empty values."""
    out: list[list[int]] = []
    for i, v in enumerate(values):
        if v == empty:
            continue
        if out and out[-1][1] == i and out[-1][2] == v:
            out[-1][1] = i + 1
        else:
            out.append([i, i + 1, v])
    return out

