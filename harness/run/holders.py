"""Who holds a claim right now, and which lease call each slot is inside, read from the slots'
shared board (`leasecheck.harness.run.slot_board`). Used only to aim faults (``pause:holder``,
``pause:releaser`` ...), never by the checker, which works from the history and the audit alone.

Waiting for a holder or a call polls the board every millisecond: reading it costs a few
microseconds, and the workers never spend anything telling.
"""
from __future__ import annotations

import os
import selectors
import threading
import time

from leasecheck.harness.run.slot_board import SlotBoard

POLL_S = 0.001


class HolderTable:
    def __init__(self, board: SlotBoard | None = None):
        self.board = board

    def _records(self):
        return self.board.records() if self.board is not None else []

    def holders(self) -> list[int]:
        """Worker indexes with at least one slot holding a claim."""
        return sorted({worker_index(p) for p, _, holding, *_ in self._records() if holding})

    def _wait(self, pick, timeout_s: float):
        """``pick(records)``'s first answer that is not None, polling the board every ``POLL_S``
        for up to ``timeout_s``; None when none came."""
        deadline = time.monotonic() + timeout_s
        while True:
            found = pick(self._records())
            if found is not None:
                return found
            if time.monotonic() >= deadline:
                return None
            time.sleep(POLL_S)

    def wait_for_holding_slot(self, timeout_s: float, fresh_s: float | None = None) -> tuple[str, int] | None:
        """A slot holding a claim now, outside ``release()`` (the most recent claimer), as
        (process, since_ns: when it began holding), waiting up to ``timeout_s`` for one. With
        ``fresh_s``, only a claim taken within the last ``fresh_s`` seconds counts. A slot inside
        ``release()`` still counts as holding until the call returns, but its delete may already
        have run: stopped then, it stalls no live claim, and the holder pause misses (about one
        pause in three hundred with 0.3 s jobs). So it is passed over."""
        if fresh_s is None:
            return self._wait(_latest_holder, timeout_s)
        window_ns = int(fresh_s * 1e9)

        def fresh(records):
            found = _latest_holder(records)
            return found if found is not None and time.monotonic_ns() - found[1] <= window_ns else None
        return self._wait(fresh, timeout_s)

    def slot(self, process: str) -> tuple[str, bool, int, int] | None:
        """(call, holding, number, since_ns) of ``process`` now, or None when the board lacks it."""
        for p, call, held, number, _, since, _ in self._records():
            if p == process:
                return call, held, number, since
        return None

    def forget(self, worker: int) -> None:
        """A killed worker's slots hold nothing and are in no call any more (kill:holder): no
        fault aims at its stale records."""
        if self.board is not None:
            for s in range(self.board.slots):
                i = worker * self.board.slots + s
                self.board.leave(i)
                self.board.hold(i, False)

    def slots_of(self, worker: int) -> list[tuple[str, bool]]:
        """(process, holding) of each slot of worker ``worker``."""
        return [(p, held) for p, _, held, *_ in self._records() if worker_index(p) == worker]

    def wait_for_call(self, call: str, timeout_s: float, exclude=(), live_s: float | None = None,
                      ttl_s: float | None = None) -> tuple[str, int] | None:
        """A slot inside ``call`` now (the one that entered it last), as (process, call number),
        waiting up to ``timeout_s`` for one; the number tells this call from the slot's next.
        Calls in ``exclude`` (such pairs) are passed over. With ``live_s`` and ``ttl_s``, so is a
        slot whose claim (taken or last renewed ``ttl_s`` before its deadline) has less than
        ``live_s`` left by the harness's clock, or that holds none: a release of a claim already
        past its deadline has nothing left to lose."""
        live_ns = int(live_s * 1e9) if live_s is not None else None
        ttl_ns = int(ttl_s * 1e9) if ttl_s is not None else 0

        def latest_inside(records):
            now = time.monotonic_ns()
            inside = [(entered, p, number) for p, c, held, number, entered, _, renewed in records
                      if c == call and (p, number) not in exclude
                      and (live_ns is None or (held and renewed + ttl_ns - now >= live_ns))]
            return max(inside)[1:] if inside else None
        return self._wait(latest_inside, timeout_s)

    def sent(self, process: str) -> int:
        """How many commands ``process``'s client sent since it entered its current (or last)
        lease call (0 without a board)."""
        return self.board.sent(self.board.index(process)) if self.board is not None else 0

    def still_holds(self, process: str, since: int) -> bool:
        """Whether ``process`` still holds the claim it began holding at ``since`` (ns), outside
        ``release()``."""
        now = self.slot(process)
        return now is not None and bool(now[1]) and now[0] != "release" and now[3] == since

    def still_in(self, process: str, number: int) -> bool:
        """Whether ``process`` is still inside its call number ``number``."""
        for p, call, _, n, _, _, _ in self._records():
            if p == process:
                return bool(call) and n == number
        return False


def _latest_holder(records) -> tuple[str, int] | None:
    holding = [(since, p) for p, call, held, _, _, since, _ in records if held and call != "release"]
    if not holding:
        return None
    since, process = max(holding)
    return process, since


def worker_index(process: str) -> int:
    """``"w3.s0"`` -> 3."""
    return int(process.split(".")[0][1:])


def pump(streams: list, stop: threading.Event, replies=None) -> None:
    """Read worker stdout lines (binary pipes) until every stream closes or ``stop`` is set.
    Reading never stops early on its own, so a worker never blocks on a full pipe while it runs.
    Answers to the harness's questions go to ``replies`` (``leasecheck.harness.run.replies.Replies``), stamped
    with the wall clock when they were read; other lines are dropped."""
    sel = selectors.DefaultSelector()
    pending: dict[int, bytes] = {}
    for s in streams:
        sel.register(s.fileno(), selectors.EVENT_READ)
        pending[s.fileno()] = b""
    try:
        while sel.get_map() and not stop.is_set():
            for key, _ in sel.select(0.1):
                fd = key.fileobj
                try:
                    chunk = os.read(fd, 65536)
                except OSError:
                    chunk = b""
                received_ns = time.time_ns()
                if not chunk:
                    sel.unregister(fd)
                    continue
                *lines, pending[fd] = (pending[fd] + chunk).split(b"\n")
                if replies is not None:
                    for line in lines:
                        replies.put(line.decode(errors="replace"), received_ns)
    finally:
        sel.close()
