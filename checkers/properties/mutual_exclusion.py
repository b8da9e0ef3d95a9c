"""Mutual exclusion across several masters (``--topology redlock``): no two attempts may hold the
lock on one key at once (`mutual_exclusion`: holds from the history, the validity rule); each
node's audit shows the (node, key) claims of both holders, one witness row per node. Silent on a
run of one store (the field is left out of results.json).

An attempt's claims are found by attempt, never by key: one attempt works on one job key, and a
library may keep its claim under a key of its own (pottery: ``redlock:`` + the job key)."""
from __future__ import annotations

from leasecheck.checkers.model.claims import Claim
from leasecheck.checkers.measures.measure import Measured
from leasecheck.checkers.measures.mutual_exclusion import Hold, violations
from leasecheck.checkers.result import OMITTED, Part

ORDER = 65
FIELDS = {"mutual_exclusion": OMITTED}


def applies(m: Measured) -> bool:
    """Only a run of several independent masters (a replicated run is judged by `failover`)."""
    return m.nodes is not None and m.config.get("topology") != "replicated"


def check(m: Measured, found) -> Part:
    if m.nodes is None:
        return Part()       # silent on a single store, also when called without `applies`
    hs = m.holds
    bad = violations(hs)
    names = [n.name for n in m.nodes]
    expected = [n.get("name") for n in m.config.get("store_nodes") or []]
    field = {"nodes": expected, "holds": len(hs), "violations": len(bad),
             "claims_per_node": {n.name: len(n.claims) for n in m.nodes},
             "foreign_releases_per_node": {n.name: len(n.foreign) for n in m.nodes},
             "first": _pair(bad[0]) if bad else None}
    part = Part({"mutual_exclusion": field})
    if bad:
        a, b = bad[0]
        lost = lost_early(m, a)
        field["first"]["lost"] = lost
        why = "".join(f"; {a.attempt} lost its claim on {x['node']} by {x['by_s']:.3f} s ({x['fate']}"
                      + (f"; {x['faults']} on {x['node']}" if x["faults"] else "") + ")" for x in lost)
        part.failures.append(
            f"mutual exclusion violated: {len(bad)} pair(s) of attempts held the lock at once; first "
            f"{a.attempt} ({_held(a)}) and {b.attempt} (won at {b.start / 1e9:.3f} s) "
            f"on {a.key}: {_majorities(m, a, b)}{why}")
        part.witness.append({"kind": "mutual_exclusion", "markdown": witness_markdown(m, a, b)})
    foreign = sum(len(n.foreign) for n in m.nodes)
    if foreign:
        part.failures.append(f"{foreign} release(s) removed another attempt's claim on some node "
                             f"({', '.join(f'{n.name}: {len(n.foreign)}' for n in m.nodes if n.foreign)})")
    missing = [x for x in expected if x not in names]
    if m.config.get("audit") is False:
        # Recorded without audits (--no-audit): the history alone still proves an overlap of two
        # holds (INVALID above), but never that none was possible — a foreign release on a master
        # and where a holder lost its majority are seen only in the masters' audits. Unknown, not
        # refused: a quick history-only hunt for overlaps is still worth running.
        part.doubts.append(f"recorded with --no-audit: the claims on each of the {len(expected)} masters are "
                           f"unseen, so {len(hs)} won acquire(s) without an overlap prove nothing more; "
                           "run without --no-audit for a verdict")
    elif missing:
        part.doubts.append(f"no audit for {', '.join(missing)}: what happened there is unknown")
    broken = [n.name for n in m.nodes if not n.complete]
    if broken:
        part.doubts.append(f"the audit of {', '.join(broken)} is incomplete: a claim there may be missing")
    if not hs:
        part.doubts.append("no acquire won a majority: there is nothing to judge")
    part.notes.append(f"mutual exclusion held: {len(hs)} won acquire(s) on {len(names)} masters, no two "
                      "promised validity intervals on one key overlapped")
    return part


def _pair(pair: tuple[Hold, Hold]) -> dict:
    a, b = pair
    return {"key": a.key, "first": a.attempt, "second": b.attempt,
            "first_promised_until_s": a.end / 1e9, "second_won_s": b.start / 1e9,
            "overlap_s": (min(a.end, b.end) - b.start) / 1e9}


def _majorities(m: Measured, a: Hold, b: Hold) -> str:
    def where(h: Hold) -> set[str]:
        return {n.name for n in m.nodes if n.of(h.attempt)}
    both = sorted(where(a) & where(b))
    return (f"{a.attempt} claimed on {', '.join(sorted(where(a))) or 'no node'}, {b.attempt} on "
            f"{', '.join(sorted(where(b))) or 'no node'}; both on {', '.join(both) or 'none'}")


def _held(a: Hold) -> str:
    """Until when A held the lock: its release, or the end of the validity it was promised."""
    return f"{'held until its release at' if a.released else 'promised until'} {a.end / 1e9:.3f} s"


def witness_markdown(m: Measured, a: Hold, b: Hold) -> str:
    """One row per node: each holder's claim there, created and ended in history seconds, and
    what the nemesis did to that node's clock or process."""
    lines = [f"## Mutual exclusion on `{a.key}`", "",
             f"A = {a.attempt} won at {a.start / 1e9:.3f} s, {_held(a)}; "
             f"B = {b.attempt} won at {b.start / 1e9:.3f} s, while A still held the lock.", "",
             "| node | A's claim | B's claim | faults on the node |", "|---|---|---|---|"]
    faults = m.faults()
    if not m.nodes:
        return "\n".join(lines[:-2] + ["No master's audit was read: the claims on each node are unseen.", ""])
    for n in m.nodes:
        def cell(h: Hold) -> str:
            return "; ".join(_claim(c, n) for c in n.of(h.attempt)) or "—"
        lines.append(f"| {n.name} | {cell(a)} | {cell(b)} | {_faults_on(faults, n.name) or '—'} |")
    return "\n".join(lines) + "\n"


# How a claim ended on its node, in words (the store model's fates; its expiry fates compare the
# expiry with the job, which on a jumped clock says little, so they read "expired").
_ENDED = {"expired_while_held": "expired", "expired_after_job": "expired", "lost_in_restart": "lost in a restart",
          "foreign_release": "removed by another attempt", "evicted": "evicted", "released_by_holder": "released"}


def lost_early(m: Measured, h: Hold) -> list[dict]:
    """The claims of ``h`` that ended on their node, other than by its own release, before its
    promise ran out: where it lost the majority it was promised."""
    out = []
    for n in m.nodes:
        faults = _faults_on(m.faults(), n.name)
        for c in n.of(h.attempt):
            end = _end_s(c, n)
            if c.fate not in ("released_by_holder", "still_held") and end is not None \
                    and end * 1e9 < h.end:
                out.append({"node": n.name, "by_s": round(end, 3), "fate": _ENDED.get(c.fate, c.fate or "ended"),
                            "faults": faults})
    return out


def _end_s(c: Claim, n) -> float | None:
    """When the claim ended, in history seconds. An expiry is a store time; under a clock jump it
    has no history time of its own, so it is taken no later than the next claim of the key there."""
    if c.ended is None:
        return None
    end = n.clock.to_history_ns(c.ended) / 1e9
    if c.fate and c.fate.startswith("expired"):
        later = [n.clock.to_history_ns(o.created) / 1e9 for o in n.claims if o.key == c.key and o.created > c.created]
        end = min([end] + later)
    return end


def _claim(c: Claim, n) -> str:
    """``created 1.000 s, expired by 2.000 s``."""
    made = n.clock.to_history_ns(c.created) / 1e9
    end = _end_s(c, n)
    if end is None:
        return f"created {made:.3f} s" + (", still held at the end" if c.fate == "still_held" else "")
    if c.fate and c.fate.startswith("expired"):
        return f"created {made:.3f} s, expired by {end:.3f} s"
    what = _ENDED.get(c.fate, c.fate)
    return f"created {made:.3f} s, {what} {end:.3f} s"


def _faults_on(faults: list[dict], node: str) -> str:
    out = []
    for f in faults:
        if f.get("target") != node:
            continue
        size = (f.get("requested") or {}).get("size")
        what = f"{f.get('fault')} {size:+g} s" if f.get("fault") == "clock" and isinstance(size, (int, float)) \
            else str(f.get("fault"))
        start, end = f.get("start_s"), f.get("end_s")
        span = f" {start:.3f}–{end:.3f} s" if isinstance(start, (int, float)) and isinstance(end, (int, float)) else ""
        out.append(what + span)
    return "; ".join(out)
