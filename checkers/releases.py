"""Releases that found nothing: the signal that a claim was gone before its job finished.

`found_nothing`: `ok` releases that returned false; `rate`: that over all completed releases
(`ok` or `fail`); `unknown`: releases that ended `info` (outcome unknown).
"""
from __future__ import annotations

from dataclasses import dataclass

from .ops import Op


@dataclass
class Releases:
    found_nothing: int = 0
    completed: int = 0
    unknown: int = 0

    @property
    def rate(self) -> float:
        return self.found_nothing / self.completed if self.completed else 0.0


def releases(ops: list[Op]) -> Releases:
    """Count the outcomes of every release call in `ops`."""
    r = Releases()
    for op in ops:
        if op.f != "release":
            continue
        if op.type in ("ok", "fail"):
            r.completed += 1
            r.found_nothing += op.type == "ok" and not op.value
        elif op.type == "info":
            r.unknown += 1
    return r
