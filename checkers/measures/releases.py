"""Releases that found nothing: the signal that a claim was gone before its job finished.

`found_nothing`: `ok` releases that returned false; `rate`: that over all completed releases
(`ok` or `fail`); `unknown`: releases that ended `info` (outcome unknown); `first`: the first
few that found nothing, to name them with their job (a signal worth logging with the job's identity).
"""
from __future__ import annotations

from dataclasses import dataclass, field

from leasecheck.checkers.read.ops import Op
from leasecheck.events import FAIL, INFO, OK, RELEASE

EXAMPLES = 5


@dataclass
class Releases:
    found_nothing: int = 0
    completed: int = 0
    unknown: int = 0
    first: list = field(default_factory=list)   # the first releases that found nothing (Op)

    def add(self, op: Op) -> None:
        """Count one completed release call (and keep the first few that found nothing)."""
        if op.type in (OK, FAIL):
            self.completed += 1
            if op.type == OK and not op.value:
                self.found_nothing += 1
                if len(self.first) < EXAMPLES:
                    self.first.append(op)
        elif op.type == INFO:
            self.unknown += 1

    @property
    def rate(self) -> float:
        return self.found_nothing / self.completed if self.completed else 0.0


def releases(ops: list[Op]) -> Releases:
    """Count the outcomes of every release call in `ops`."""
    r = Releases()
    for op in ops:
        if op.f == RELEASE:
            r.add(op)
    return r
