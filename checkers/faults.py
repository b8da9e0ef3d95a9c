"""The faults a run injected, from the history: what was asked for and what was measured.

Pairs each ``fault_start`` with its ``fault_end`` (by ``n``); a fault without an end (the run was
killed mid-fault) is listed with ``end_s`` null.
"""
from __future__ import annotations


def faults(events: list[dict]) -> list[dict]:
    out: dict[int, dict] = {}
    for e in events:
        if e.get("type") == "fault_start":
            out[e.get("n", len(out))] = {
                "n": e.get("n"), "fault": e.get("fault"), "target": e.get("target"),
                "start_s": round(e["time"] / 1e9, 3), "end_s": None,
                "requested": e.get("requested", {}), "measured": None}
        elif e.get("type") == "fault_end" and e.get("n") in out:
            f = out[e["n"]]
            f["end_s"] = round(e["time"] / 1e9, 3)
            f["measured"] = e.get("measured", {})
    return [out[k] for k in sorted(out, key=lambda k: out[k]["start_s"])]
