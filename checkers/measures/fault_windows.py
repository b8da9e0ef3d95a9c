"""What the nemesis did, on the history's time axis: who was paused when, and one line per fault
start and end, for the diagnosis and the witness timelines.

Built from the run's `faults` list (`faults.FaultTracker.summary()`: fault, target, start_s,
end_s, requested, measured). A pause's processes come from what the harness recorded for it —
worker names (`measured.processes`, e.g. `["w3"]`) or pids, which `worker_start` events map to
worker names. A fault without an end (the run was killed mid-fault) lasts to the history's end.
"""
from __future__ import annotations

from dataclasses import dataclass

from leasecheck.protocol import is_node, on_store


@dataclass(frozen=True)
class Window:
    fault: dict
    start: int            # history ns
    end: int              # history ns
    workers: frozenset    # paused worker names ("w3"); empty for other faults
    store_paused: bool = False


class FaultWindows:
    def __init__(self, faults: list[dict], pids: dict[int, str] | None = None, end_ns: int = 0):
        self.windows: list[Window] = []
        for f in faults or []:
            start = int(round((f.get("start_s") or 0.0) * 1e9))
            end = int(round(f["end_s"] * 1e9)) if f.get("end_s") is not None else max(end_ns, start)
            names = _paused(f, pids or {}) if f.get("fault") == "pause" else set()
            store = {n for n in names if on_store(n)}
            self.windows.append(Window(f, start, end, frozenset(names - store),
                                       f.get("fault") == "pause" and (bool(store) or on_store(f.get("target")))))

    def __bool__(self) -> bool:
        return bool(self.windows)

    def pause_of(self, attempt: str | None, t: int) -> Window | None:
        """The pause fault that held `attempt`'s worker stopped at history time `t`, if any."""
        if not attempt:
            return None
        worker = attempt.split(".", 1)[0]
        return next((w for w in self.windows if worker in w.workers and w.start <= t < w.end), None)

    def holder_paused(self, to_history_ns):
        """A predicate for `causes`: was a claim's holder paused when the claim ended (its
        deadline)? `to_history_ns` converts the claim's store time."""
        def paused(claim) -> bool:
            if claim.ended is None:
                return False
            return self.pause_of(claim.owner, to_history_ns(claim.ended)) is not None
        return paused

    def rows(self, t0: int, t1: int) -> list[tuple[int, str, bool]]:
        """(history ns, what the nemesis did, True for a start) for each fault start or end within
        [t0, t1], and the start of any fault already acting at t0 (what put the actors in the
        state shown)."""
        out = []
        for w in self.windows:
            if w.start <= t0 < w.end or t0 <= w.start <= t1:
                out.append((w.start, started(w), True))
            if t0 <= w.end <= t1 and w.fault.get("end_s") is not None:
                out.append((w.end, ended(w), False))
        return sorted(out)


def _paused(f: dict, pids: dict[int, str]) -> set[str]:
    """Worker names a pause stopped, from whatever the harness recorded for it."""
    names: set[str] = set()
    for where in (f, f.get("requested") or {}, f.get("measured") or {}):
        if not isinstance(where, dict):
            continue
        for n in where.get("processes") or []:
            names.add(str(n))
        for pid in where.get("pids") or []:
            if pid in pids:
                names.add(pids[pid])
    return names


def _num(x, unit: str = "s", sign: bool = False) -> str:
    if not isinstance(x, (int, float)) or isinstance(x, bool):
        return "?"
    return f"{x:+.3f} {unit}" if sign else f"{x:.3f} {unit}"


def started(w: Window) -> str:
    """The nemesis cell of a fault's start row."""
    f = w.fault
    req, kind, target = f.get("requested") or {}, f.get("fault"), f.get("target")
    if kind == "pause":
        who = "the store" if w.store_paused else ", ".join(sorted(w.workers)) or f"a {target}"
        return f"pauses {who} (SIGSTOP)"
    if kind == "clock":
        where = f"{target}'s clock" if is_node(target) else "store clock" if target == "store" else "workers' clocks"
        measured = (f.get("measured") or {}).get("store_skew_s")
        seen = f" (measured {_num(measured, sign=True)})" if measured is not None else ""
        return f"{where} jumped {_num(req.get('size'), sign=True)}{seen}"
    if kind == "evict":
        return "eviction: store memory squeezed, keys evicted at random"
    if kind == "kill":
        return "kills the store (SIGKILL)"
    if kind == "latency":
        return f"adds {req.get('size', '?')} ms latency on the workers' path"
    if kind == "partition":
        return "cuts the workers off from the store (partition)"
    return f"{kind} on {target} begins"


def ended(w: Window) -> str:
    """The nemesis cell of a fault's end row."""
    f = w.fault
    kind = f.get("fault")
    if kind == "pause":
        who = "the store" if w.store_paused else ", ".join(sorted(w.workers)) or "them"
        return f"resumes {who} (SIGCONT)"
    if kind == "clock":
        return "store clock set back" if f.get("target") == "store" else "workers' clocks set back"
    if kind == "evict":
        return "eviction ends (memory limit restored)"
    if kind == "kill":
        return "store restarted (empty)"
    if kind in ("latency", "partition"):
        return f"{kind} healed"
    return f"{kind} on {f.get('target')} ends"
