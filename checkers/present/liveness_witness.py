"""Liveness findings as timelines a person can read, in the safety witnesses' form (a heading, a
sentence, a table: the time in seconds since the run's start, a column per attempt involved, the
nemesis when it acted, and what the key in the store holds): the first stuck claim, and the first
claim kept alive by another attempt.
"""
from __future__ import annotations

from leasecheck.checkers.measures.liveness import HolderEnds, spans

COLUMNS_STUCK = ["Time (s)", "Holder", "Nemesis", "The key in the store"]


def _table(title: str, summary: str, key: str, kind: str, columns: list[str],
           rows: list[tuple[float, list[str]]]) -> dict:
    rows = sorted(rows, key=lambda r: r[0])
    md = [f"## {title} on `{key}`", "", summary, "", "| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    md += ["| " + " | ".join([f"{t:.3f}"] + cells) + " |" for t, cells in rows]
    return {"kind": kind, "key": key, "columns": columns, "summary": summary,
            "rows": [{"time_s": round(t, 3), "cells": cells} for t, cells in rows], "markdown": "\n".join(md) + "\n"}


def _kill_rows(m, attempt: str, start: float, end: float) -> list[tuple[float, list[str]]]:
    rows = []
    for f in m.faults():
        if f.get("fault") in ("kill", "hang") and f.get("target") == "holder" and start - 1e-3 <= f["start_s"] <= end:
            meas = f.get("measured") or {}
            what = (f"SIGKILL {', '.join(meas.get('processes') or [])}" if f["fault"] == "kill"
                    else f"hangs {meas.get('slot')}'s job")
            rows.append((f["start_s"], ["—", what, "—"]))
            if f.get("end_s") is not None and f["end_s"] <= end:
                healed = (f"replacement {meas.get('replacement')} started" if f["fault"] == "kill"
                          else "the job goes on")
                rows.append((f["end_s"], ["—", healed, "—"]))
    return rows


def stuck_witness(m, s: dict) -> dict:
    """The timeline of stuck claim entry `s` (`measures.liveness.stuck`)."""
    ttl_s = float(m.config.get("ttl_ms") or 0) / 1000
    expiry = "no expiry" if s["no_expiry"] else "an expiry"
    rows = [(s["created_s"], [f"{s['attempt']} wins the conditional create", "—", f"its claim, {expiry}"]),
            (s["holder_ended_s"], [f"its attempt ends: {s['how']}", "—", "its claim, nobody left to release it"]),
            (s["holder_ended_s"] + ttl_s, ["—", "—", f"still its claim, a TTL ({ttl_s:g} s) after its holder ended"])]
    end_s = s["holder_ended_s"] + s["stayed_s"]
    rows.append((end_s, ["—", "—", "still its claim when the run ended" if s["still_held"]
                         else f"gone ({s['fate'].replace('_', ' ')})"]))
    rows += _kill_rows(m, s["attempt"], s["created_s"], end_s)
    summary = (f"Attempt {s['attempt']}'s claim outlived its holder by {s['stayed_s']:g} s"
               f"{' or more' if s['still_held'] else ''}: {s['cause']}.")
    return _table("Stuck claim", summary, s["key"], "stuck_claim", COLUMNS_STUCK, rows)


def kept_entries(m) -> tuple[int, int, list[dict]]:
    """(commands, claims, the first claims' entries) of the model's `kept_alive` list."""
    kept = m.model.kept_alive if m.model is not None else []
    if not kept:
        return 0, 0, []
    to_h = m.clock.to_history_ns
    by_claim: dict[int, list] = {}
    for k in kept:
        by_claim.setdefault(id(k.claim), []).append(k)
    span_of = {id(s.claim): s for s in spans(m)}
    ends = HolderEnds(m)
    out = []
    for group in by_claim.values():
        k, c = group[0], group[0].claim
        span = span_of.get(id(c))
        end_ns = span.ended_ns if span else m.end
        first_old_ns = to_h(k.old_ms / 1000) if k.old_ms is not None else None
        kept_s = max(0.0, (end_ns - first_old_ns) / 1e9) if first_old_ns is not None else None
        holder = ends.get(c.owner)
        entry = {"attempt": c.owner, "key": c.key, "by": k.by, "f": k.f or "call", "command": k.command,
                 "line": k.line, "time_s": round(to_h(k.time) / 1e9, 3), "commands": len(group),
                 "others": sorted({g.by for g in group if g.by})[:5],
                 "who": ("other attempts' acquires" if all(g.f == "acquire" for g in group)
                         else "other attempts' commands"),
                 "kept_s": round(kept_s, 3) if kept_s is not None else None,
                 "created_s": round(to_h(c.created) / 1e9, 3), "ended_s": round(end_ns / 1e9, 3),
                 "still_held": bool(span and span.still_held), "after_holder_s": None, "holder_how": None}
        if holder is not None and end_ns > holder[0]:
            entry["after_holder_s"] = round((end_ns - holder[0]) / 1e9, 3)
            entry["holder_how"], entry["holder_ended_s"] = holder[1], round(holder[0] / 1e9, 3)
        out.append(entry)
    # the most telling first: a claim kept after its holder ended, longest; then the longest kept
    out.sort(key=lambda e: (e["after_holder_s"] is None, -(e["after_holder_s"] or 0), -(e["kept_s"] or 0)))
    return len(kept), len(by_claim), out[:5]


def kept_witness(m, k: dict) -> dict:
    """The timeline of kept-alive entry `k` (`kept_entries`)."""
    rows = [(k["created_s"], [f"{k['attempt']} wins the conditional create", "—", "—", "its claim"])]
    if k.get("holder_ended_s") is not None:
        rows.append((k["holder_ended_s"], [f"its attempt ends: {k['holder_how']}", "—", "—", "its claim"]))
    rows.append((k["time_s"], ["—", f"{k['by']}'s {k['f']}: {k['command']} lengthens the claim's expiry", "—",
                               "its claim, kept alive by another attempt"]))
    if k["commands"] > 1:
        rows.append((k["time_s"], ["—", f"... and {k['commands'] - 1} more such command(s) of "
                                        f"{', '.join(k['others'])}", "—", "its claim"]))
    rows.append((k["ended_s"], ["—", "—", "—", "still its claim when the run ended" if k["still_held"] else "gone"]))
    rows = [(t, [c[0], c[1], c[2], c[3]]) for t, c in rows]
    for t, cells in _kill_rows(m, k["attempt"], k["created_s"], k["ended_s"]):
        rows.append((t, [cells[0], "—", cells[1], cells[2]]))
    summary = kept_sentence(k)[0].upper() + kept_sentence(k)[1:] + "."
    return _table("Claim kept alive by another attempt", summary, k["key"], "kept_alive",
                  ["Time (s)", "Holder", "Other attempts", "Nemesis", "The key in the store"], rows)


def kept_sentence(k: dict) -> str:
    """'other attempts' acquires kept attempt w1.s0.3's claim on K alive 3.9 s after its holder's
    attempt ended (its worker w1 was killed)', or '... alive 0.4 s past the expiry its holder set'."""
    alive = f"{k['who']} kept attempt {k['attempt']}'s claim on {k['key']} alive"
    if k.get("after_holder_s") is not None:
        more = " or more (it was still there when the run ended)" if k["still_held"] else ""
        return f"{alive} {k['after_holder_s']:g} s{more} after its holder's attempt ended ({k['holder_how']})"
    return f"{alive} {k['kept_s']:g} s past the expiry its holder set"
