"""When each claiming attempt ended, from the history: what a stuck claim is measured from.

An attempt that may hold a claim — its acquire returned true, or raised (outcome unknown: it may
have won) — *ended* at the completion of its last lease call: its release's (returned or raised),
or the acquire's own when that raised, or a renewal's that stopped its job. An attempt whose last
call never completed has not ended (it is a hung call's, or its process was killed: a kill ends
it at the kill, `kills`). Attempts that lost their acquire are not kept: they never held anything.
"""
from __future__ import annotations

from leasecheck.checkers.read.ops import Op
from leasecheck.events import ACQUIRE, INFO, OK, RELEASE, RENEW


class AttemptEnds:
    """Feed completed calls (``ops.Op``) in history order."""

    def __init__(self) -> None:
        self.ended: dict[str, int] = {}       # attempt -> history ns of its last completion
        self.how: dict[str, str] = {}         # attempt -> "released", "raised", ...

    def feed(self, op: Op) -> None:   # (typed: compiled, its fields are read natively)
        if op.end_time is None or op.f not in (ACQUIRE, RELEASE, RENEW):
            return
        if op.f == ACQUIRE:
            if op.type == INFO:
                self.ended[op.attempt], self.how[op.attempt] = op.end_time, "its acquire raised"
            return
        if op.attempt not in self.ended and op.f != RELEASE and op.type == OK and op.value is True:
            return                               # a renewal in the job: the attempt goes on
        if op.f == RELEASE:
            how = "released" if op.type == OK else "its release raised"
        elif op.type == INFO:
            how = f"its {op.f} raised"
        else:
            how = f"its {op.f} returned {op.value!r}"
        self.ended[op.attempt], self.how[op.attempt] = op.end_time, how

    def end_of(self, attempt: str) -> tuple[int, str] | None:
        t = self.ended.get(attempt)
        return (t, self.how[attempt]) if t is not None else None


def kills(faults: list[dict]) -> dict[str, tuple[int, str]]:
    """attempt -> (history ns of the SIGKILL, "its worker w3 was killed") for every attempt a
    ``kill:holder`` fault names as dying with its worker (``measured.attempts``)."""
    out: dict[str, tuple[int, str]] = {}
    for f in faults:
        m = f.get("measured") or {}
        if f.get("fault") != "kill" or f.get("target") != "holder" or not m.get("attempts"):
            continue
        at = int(round((f["start_s"] + float(m.get("killed_after_s") or 0.0)) * 1e9))
        who = ", ".join(m.get("processes") or [])
        for a in m["attempts"]:
            out.setdefault(a, (at, f"its worker {who} was killed"))
    return out


def hangs(faults: list[dict]) -> list[tuple[str, int, int | None]]:
    """(slot, start ns, end ns) of every ``hang:holder`` fault that hung a slot."""
    out = []
    for f in faults:
        m = f.get("measured") or {}
        if f.get("fault") == "hang" and m.get("slot"):
            end = f.get("end_s")
            out.append((m["slot"], int(f["start_s"] * 1e9), int(end * 1e9) if end is not None else None))
    return out
