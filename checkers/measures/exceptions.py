"""Exceptions a lease raised: counted by type, with the first of them (Jepsen's "unhandled
exceptions"). docs/history.md, "Exceptions", states the rule.

Two kinds of event carry one: `lease_error` (the lease's constructor raised; the attempt made no
call) and an `info` completion with an `error` (acquire, release, renew, or the job's `--sink`
write raised; its outcome is unknown). Each such event is one exception, counted under the type
its `error` names (`"RuntimeError: boom"` -> `RuntimeError`). A lease call that completed
without an exception (`ok`, `fail`) counts in `calls`, so the property can tell a lease that
sometimes raises from one that always does.
"""
from __future__ import annotations

from leasecheck.events import FAIL, INFO, LEASE_ERROR, OK, TYPE

CONSTRUCTOR = "constructor"


# Exception types (as `error` names them) that say the store could not be reached or did not
# answer in time — a fault or the network, not the lease's own code.
STORE_ERRORS = frozenset({"timeout", "TimeoutError", "ConnectionError", "socket.timeout", "BusyLoadingError",
                          "ConnectionResetError", "BrokenPipeError", "ConnectionRefusedError"})


def split_error(error: object) -> tuple[str, str]:
    """`"RuntimeError: boom"` -> `("RuntimeError", "boom")`; an error without a type -> `("Exception", ...)`."""
    text = str(error)
    kind, sep, message = text.partition(": ")
    if sep and kind and " " not in kind:
        return kind, message
    return (text, "") if text and " " not in text else ("Exception", text)


class Exceptions:
    """Feed every `lease_error` event and every lease call's completion."""

    def __init__(self) -> None:
        self.by_type: dict[str, int] = {}
        self.count = 0          # exceptions: constructors and calls that raised
        self.constructors = 0   # of them, constructors
        self.calls = 0          # lease calls that completed (with or without an exception)
        self.store_errors = 0   # of the exceptions, the store's path failing (a timeout, a lost connection)
        self.first: dict | None = None

    def feed(self, e: dict) -> None:
        kind = e.get(TYPE)
        if kind in (OK, FAIL):
            self.calls += 1
            return
        if kind == INFO:
            self.calls += 1
            if "error" not in e:
                return
        elif kind != LEASE_ERROR:
            return
        name, message = split_error(e.get("error", ""))
        self.by_type[name] = self.by_type.get(name, 0) + 1
        self.count += 1
        if kind == LEASE_ERROR:
            self.constructors += 1
        elif name in STORE_ERRORS or str(e.get("error", "")).split(":")[0].strip() in STORE_ERRORS:
            self.store_errors += 1
        if self.first is None:
            self.first = {"type": name, "message": message, "in": e.get("f") or CONSTRUCTOR,
                          "attempt": e.get("attempt"), "process": e.get("process"), "time": e.get("time")}

    @property
    def every_attempt_raised(self) -> bool:
        """Exceptions, and no lease call that returned: the lease never worked once. Calls that
        only lost their way to the store (`STORE_ERRORS`: their outcome is unknown, the audit still
        says what they did) are no sign of a broken lease: a run whose every call timed out is
        judged from the audit and by the evidence it has."""
        raised = self.count - self.constructors
        return self.count > 0 and raised == self.calls and (self.constructors > 0 or raised > self.store_errors)

    def to_dict(self) -> dict:
        """results.json's `exceptions`: the count, the count of each type (most first), the first."""
        first = dict(self.first) if self.first else None
        if first is not None:   # history time: nanoseconds since the harness started its clock
            t = first.pop("time")
            first["time_s"] = round(t / 1e9, 3) if isinstance(t, int) else None
        return {"count": self.count, "by_type": dict(sorted(self.by_type.items(), key=lambda kv: (-kv[1], kv[0]))),
                "first": first}
