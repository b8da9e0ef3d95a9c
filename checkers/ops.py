"""Lease calls: pair each `invoke` with its completion (`ok`, `fail` or `info`) by attempt.

An attempt makes one call at a time, so a completion belongs to the attempt's open invocation.
A call that never completed (the run was killed) has `done` None: its outcome and its `sent`
list are unknown. Pairing problems (a completion without an invocation, two open invocations)
are reported, not raised.
"""
from __future__ import annotations

from dataclasses import dataclass

CALLS = ("acquire", "release", "renew", "effect")   # "effect": a job's write to the --sink
COMPLETIONS = ("ok", "fail", "info")


@dataclass(slots=True)
class Op:
    """One lease call: its invocation and, when it completed, the completion event."""
    index: int
    attempt: str
    f: str
    key: str
    invoke_time: int
    done: dict | None = None

    @property
    def type(self) -> str | None:
        """'ok', 'fail', 'info', or None when the call never completed."""
        return self.done["type"] if self.done else None

    @property
    def value(self):
        """The returned value of an `ok` call (a boolean), else None."""
        return self.done.get("value") if self.done and self.done["type"] == "ok" else None

    @property
    def succeeded(self) -> bool | None:
        """True/False when the client knows the outcome (ok true / ok false or fail), else None."""
        if self.type == "ok":
            return bool(self.value)
        return False if self.type == "fail" else None

    @property
    def sent(self) -> list:
        """The `[conn, seq, name]` entries of the completion ([] when unknown or none)."""
        return (self.done or {}).get("sent") or []

    @property
    def end_time(self) -> int | None:
        return self.done["time"] if self.done else None


def slot_of(name: str) -> str:
    """'w3.s1' for an attempt 'w3.s1.17' or a connection 'w3.s1.c2'."""
    return name.rsplit(".", 1)[0]


def pair_ops(events: list[dict]) -> tuple[list[Op], list[str]]:
    """Return `(ops, problems)`; ops in invocation order."""
    ops: list[Op] = []
    open_: dict[str, Op] = {}
    problems: list[str] = []
    for e in events:
        kind, f = e.get("type"), e.get("f")
        if f not in CALLS or kind not in ("invoke",) + COMPLETIONS:
            continue
        attempt = e.get("attempt")
        if kind == "invoke":
            if attempt in open_:
                problems.append(f"history #{e.get('index')}: {attempt} invoked {f} while its "
                                f"{open_[attempt].f} was still open")
            op = Op(len(ops), attempt, f, e.get("key"), e["time"])
            ops.append(op)
            open_[attempt] = op
            continue
        op = open_.pop(attempt, None)
        if op is None or op.f != f:
            problems.append(f"history #{e.get('index')}: {kind} of {f} by {attempt} "
                            "has no matching invoke (ignored)")
            if op is not None:
                open_[attempt] = op
            continue
        op.done = e
    return ops, problems
