"""The faults a run injected, from the history: what was asked for and what was measured.

Pairs each ``fault_start`` with its ``fault_end`` (by ``n``); a fault without an end (the run was
killed mid-fault) is listed with ``end_s`` null.
"""
from __future__ import annotations


class FaultTracker:
    """Feed events in history order; `summary()` lists the faults. `starts` keeps the
    ``fault_start`` events themselves (few; other checkers look at them)."""

    def __init__(self) -> None:
        self.starts: list[dict] = []
        self._out: dict[int, dict] = {}

    def feed(self, e: dict) -> None:
        kind = e.get("type")
        if kind == "fault_start":
            self.starts.append(e)
            self._out[e.get("n", len(self._out))] = {
                "n": e.get("n"), "fault": e.get("fault"), "target": e.get("target"),
                "start_s": round(e["time"] / 1e9, 3), "end_s": None,
                "requested": e.get("requested", {}), "measured": None}
        elif kind == "fault_end" and e.get("n") in self._out:
            f = self._out[e["n"]]
            f["end_s"] = round(e["time"] / 1e9, 3)
            f["measured"] = e.get("measured", {})

    def summary(self) -> list[dict]:
        out = self._out
        return [out[k] for k in sorted(out, key=lambda k: out[k]["start_s"])]


def faults(events) -> list[dict]:
    t = FaultTracker()
    for e in events:
        t.feed(e)
    return t.summary()
