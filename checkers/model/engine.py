"""Run the join and the store model over the audit while reading the history only as far as
each audit line needs — both streams are read once, side by side.

An audit line is attributed by the `sent` list of the call that sent it, which the history
has once that call completed; so before each line the history is read on until that call is
in (or the history is over), and before the model decides whether an expired claim's job was
still running, the history is read past the expiry. The history runs ahead of the audit by
about the longest call; calls are forgotten once their commands have all been applied and
checked. Memory: the claims, the job runs, and the calls in flight — not the history, not the
audit.
"""
from __future__ import annotations

from typing import Any, Final

from leasecheck.checkers.read import digest as _digest
from leasecheck.checkers.model.claims import Replay, TRUST_CLIENT_MS
from leasecheck.checkers.model.clock import StoreClock
from leasecheck.checkers.read.digest import Digest
from leasecheck.checkers.errors import HistoryError
from leasecheck.checkers.model.join import Joiner, _Binding
from leasecheck.checkers.read.ops import Op
from leasecheck.checkers.read.audit import AuditRecord
from leasecheck.events import FAIL, OK


_OVER: Final = object()


class Engine:
    def __init__(self, events, audit, progress=None) -> None:
        self.audit, self.progress = audit, progress
        self.joiner = Joiner()
        self.digest = Digest(on_late=self.joiner.add_late, joiner=self.joiner)
        self._it = iter(events)
        self.history_over = False

    def start(self) -> Digest:
        """Read the first event (the run's start and its config); HistoryError when there is none."""
        self.pull()
        return self.digest

    def pull(self) -> bool:
        """Read one more history event; False when the history is over."""
        if self.history_over:
            return False
        e: Any = next(self._it, _OVER)
        if e is _OVER:
            self._over()
            return False
        digest = self.digest
        digest.feed(e)
        if self.progress is not None and not digest.count % _digest.PROGRESS_EVERY:
            self.progress()
        return True

    def _read_until_ready(self, rec: AuditRecord, binding: _Binding | None) -> None:
        """`pull` until the joiner is `ready` for `rec` or the history is over. Only a call's
        completion (the joiner's `add`) can make it ready, so it is asked only after one; and
        what decides it then does not change (`binding`, the joiner's `numbered_by(rec)`, which
        the caller has looked up: the binding is the audit's), so only its numbers are asked."""
        if self.history_over:
            return
        # (methods called on their objects, not kept in locals: compiled, those are C calls; a
        # `for` loop, not `next(it, default)`: compiled, the iterator's own C call, not a Python one)
        joiner, digest, progress = self.joiner, self.digest, self.progress
        name = rec.name
        e: Any
        for e in self._it:
            added = joiner.added
            digest.feed(e)
            if progress is not None and not digest.count % _digest.PROGRESS_EVERY:
                progress()
            if joiner.added != added and (binding is None or joiner.numbers_ready(binding, name)):
                return
        self._over()

    def _over(self) -> None:
        if not self.digest.count:
            raise HistoryError("the history is empty: nothing to check") from None
        self.history_over = True
        self.joiner.history_done(self.digest.pairer.never_completed())

    def need(self, t_ns: int) -> None:
        """Read the history past history time `t_ns`."""
        while not self.history_over and self.digest.end <= t_ns and self.pull():
            pass

    def _attributed(self, settle=None):
        """Yield `(record, attempt, op)` for every audit record, reading the history as far as
        each needs; before a non-script record, `settle(op)` gets each call whose commands were
        all found (their effects are final then). The history is read to its end afterwards."""
        joiner, pull = self.joiner, self.pull
        n, every = 0, _digest.PROGRESS_EVERY
        for rec in self.audit:
            while not joiner.ready(rec) and pull():
                pass
            if rec.addr != "lua":
                for op in joiner.take_matched():
                    if settle is not None:
                        settle(op)
            attempt, op = joiner.feed(rec)
            yield rec, attempt, op
            n += 1
            if self.progress is not None and not n % every:
                self.progress()
        while pull():
            pass
        for op in joiner.take_matched():
            if settle is not None:
                settle(op)

    def replay(self, clock: StoreClock, prefix: str, trust_ms: float = TRUST_CLIENT_MS,
               replicated_from: frozenset[str] = frozenset(), copy_owner=None, on_model=None):
        """One pass over the audit; returns `(joined, model result, calls not settled)`.
        ``replicated_from``: addresses a replica applies its primary's commands from;
        ``copy_owner``: whose claim a copy applied from there is (`claims.Claims`);
        ``on_model(result)``, when given, gets the model's `ClaimsResult` before the first line,
        which the model fills as it goes (`nodes.NodeFeed`: the other nodes read its creates).

        The loop of `_attributed`, written out: it runs once per audit line."""
        replay = Replay(self.digest.jobs.runs, clock, prefix, trust_ms, need=self.need,
                        replicated_from=replicated_from, copy_owner=copy_owner)
        if on_model is not None:
            on_model(replay.out)
        joiner = self.joiner
        bound, wanted = joiner.bound, joiner.wanted
        n, every, progress = 0, _digest.PROGRESS_EVERY, self.progress
        # (a test may watch the joiner's attribution, `Joiner.watch`; while none does, its own
        # method is called on the joiner: compiled, a C call rather than a call of a bound method)
        watch = joiner.watch
        own = watch is None
        rec: AuditRecord
        binding: _Binding | None
        by_seq: dict[int, Op] | None
        sender: Op | None
        for rec in self.audit:
            sender, binding, by_seq = None, None, None
            if rec.addr != "lua":
                # `ready`'s common case first, inline: the line's call is in (`sender`, the call
                # that sent the connection's next command).
                binding = bound.get(rec.addr)
                if binding is not None:
                    seq: Any = binding.seq      # (boxed once: compiled, each look-up would box it)
                    by_seq = wanted.get(binding.conn)
                    sender = by_seq.get(seq) if by_seq is not None else None
                    numbered = joiner.numbered_by(rec) if sender is None else None
                    # (`ready`, in its two steps: what decides it is handed on to the reading)
                    if numbered is not None and not joiner.numbers_ready(numbered, rec.name):
                        self._read_until_ready(rec, numbered)
                        # (the history read on adds calls: the line's may be in now; the binding
                        # is the audit's, which reading the history does not change)
                        by_seq = wanted.get(binding.conn)
                        sender = by_seq.get(seq) if by_seq is not None else None
                elif not joiner.ready(rec):
                    self._read_until_ready(rec, joiner.numbered_by(rec))
                if joiner.matched:
                    for done in joiner.take_matched():
                        replay.settle(done)
            if sender is not None and own and binding is not None and by_seq is not None:
                # (what was looked up above, handed on: the join need not look it up again)
                attempt, op = joiner.next_of(rec, binding, by_seq, sender)
            else:
                attempt, op = joiner._feed(rec) if watch is None else watch(rec)
            replay.feed(rec, attempt, op)
            n += 1
            if progress is not None and not n % every:
                progress()
        while self.pull():
            pass
        for op in joiner.take_matched():
            replay.settle(op)
        joined = self.joiner.finish(self.audit.complete)
        for op in joiner.take_matched():   # found by the end (a last transaction that never ran)
            replay.settle(op)
        remaining = self.joiner.remaining()
        return joined, replay.finish(joined, remaining), remaining

    def windows(self, limit: int = -1) -> tuple[list[tuple[float, int, int]], float | None]:
        """A join-only pass (to estimate the store clock without samples): (store time,
        invocation, completion) of every joined command of a call that got a reply — the first
        `limit` of them, when it is not negative: the pass stops there — and the first
        command's store time."""
        windows: list[tuple[float, int, int]] = []
        first = None
        for rec, _, op in self._attributed():
            if first is None and rec.kind == "cmd":
                first = rec.time
            if op is not None and rec.addr != "lua" and op.type in (OK, FAIL):
                windows.append((rec.time, op.invoke_time, op.end_time))
                if len(windows) == limit:
                    break
        return windows, first
