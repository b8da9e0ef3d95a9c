"""Answers the workers print on stdout to a question the harness wrote on their stdin.

Two questions: ``clock <token>``, answered ``clock <token> <wall_ns>`` with the
worker's own ``time.time_ns()`` — its wall clock as libfaketime shows it to the lease code, the
evidence that a ``clock:workers`` fault moved it; and ``hang <slot> <token>`` (``hang:holder``),
answered ``hang <token> 1`` when that slot's job was frozen while running (0: it held none). The stdout reader (``holders.pump``) hands every
line here first and stamps it with the harness's (never faked) wall clock on arrival.
"""
from __future__ import annotations

import threading
import time


ANSWERS = ("clock", "hang")   # clock <token> <wall_ns>; hang <token> <1|0> (hang:holder)


class Replies:
    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._got: dict[str, tuple[int, int]] = {}

    def put(self, line: str, received_ns: int) -> bool:
        """Keep ``line`` if it is an answer (returns True); other lines are not ours."""
        parts = line.split()
        if len(parts) != 3 or parts[0] not in ANSWERS:
            return False
        try:
            wall_ns = int(parts[2])
        except ValueError:
            return True
        with self._cond:
            self._got[parts[1]] = (wall_ns, received_ns)
            self._cond.notify_all()
        return True

    def wait(self, tokens: list[str], timeout_s: float) -> dict[str, tuple[int, int]]:
        """``{token: (the worker's wall_ns, the harness's wall_ns on arrival)}`` for the tokens
        answered within ``timeout_s`` (a stopped worker answers late or never)."""
        deadline = time.monotonic() + timeout_s
        with self._cond:
            while not all(t in self._got for t in tokens):
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                self._cond.wait(left)
            return {t: self._got.pop(t) for t in tokens if t in self._got}
