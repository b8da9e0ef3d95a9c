"""Hung calls: the lease calls a worker reported still running after the run's call bound
(``call_hung`` events, docs/history.md "Hung calls"), read from the history alone.

The worker reports each such call once, with the stack of the thread making it. A call may still
return after its report (it was slow beyond the bound, not stuck for good): its completion is
matched by attempt, call and invocation time, and its entry says when (``returned_after_s``).
"""
from __future__ import annotations

from leasecheck.events import CALL_HUNG, TYPE

FIRST = 5          # entries kept with their stacks; the count covers all
STACK_LINES = 2    # innermost source lines quoted in the reason


class HungCalls:
    """Feed ``call_hung`` events (``feed``) and completed calls (``returned``), in history order."""

    def __init__(self) -> None:
        self.count = 0
        self.first: list[dict] = []
        self._kept: dict[tuple, dict] = {}      # (attempt, f, invoked) -> its entry in `first`

    def feed(self, e: dict) -> None:
        if e.get(TYPE) != CALL_HUNG:
            return
        self.count += 1
        if len(self.first) >= FIRST:
            return
        invoked = e.get("invoked")
        entry = {"attempt": e.get("attempt"), "f": e.get("f"), "key": e.get("key"),
                 "process": e.get("process"),
                 "invoked_s": round(invoked / 1e9, 3) if isinstance(invoked, int) else None,
                 "running_s": e.get("running_s"), "bound_s": e.get("bound_s"),
                 "reported_s": round(e["time"] / 1e9, 3), "returned_after_s": None,
                 "stack": e.get("stack") or ""}
        self.first.append(entry)
        self._kept[(entry["attempt"], entry["f"], invoked)] = entry

    def returned(self, op) -> None:
        """A completed call (``ops.Op``): if it is one reported hung, note when it returned."""
        entry = self._kept.get((op.attempt, op.f, op.invoke_time)) if self._kept else None
        if entry is not None and op.end_time is not None:
            entry["returned_after_s"] = round((op.end_time - op.invoke_time) / 1e9, 3)

    def to_dict(self) -> dict:
        return {"count": self.count, "first": [dict(x) for x in self.first]}


def innermost(stack: str, lines: int = STACK_LINES) -> str:
    """The last ``lines`` frames of a formatted stack, each as ``file:line in fn: source``."""
    frames = []
    for block in stack.split('  File "')[1:]:
        head, _, source = block.partition("\n")
        path, _, rest = head.partition('", line ')
        number, _, fn = rest.partition(", in ")
        frames.append(f"{path.rsplit('/', 1)[-1]}:{number} in {fn.strip()}: {source.strip()}".rstrip(": "))
    return " <- ".join(reversed(frames[-lines:])) if frames else stack.strip()[:200]


def sentence(entry: dict, count: int) -> str:
    """The reason of a run with hung calls, naming the first."""
    running = entry.get("running_s")
    took = f"{running:g} s" if isinstance(running, (int, float)) else "the call bound"
    bound = entry.get("bound_s")
    of = f" (bound {bound:g} s)" if isinstance(bound, (int, float)) else ""
    later = (f", and returned only after {entry['returned_after_s']:g} s"
             if entry.get("returned_after_s") is not None else "")
    more = f"; {count - 1} more hung call(s)" if count > 1 else ""
    return (f"attempt {entry.get('attempt')}'s {entry.get('f')} on {entry.get('key')} had not returned after "
            f"{took}{of}{later}: {innermost(entry.get('stack') or '')}{more} — a hung call is a liveness "
            "failure, never VALID")
