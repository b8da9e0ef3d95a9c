"""Attribute audit lines to lease calls (docs/history.md, "Attribution: `sent`").

The rules, in audit order:

- `"ECHO" "leasecheck:conn:<conn>"` from address X binds X to connection `<conn>`; the following
  lines from X are that connection's commands `seq` 0, 1, 2, ... (the marker is not numbered).
  A later marker from the same address re-binds it.
- A history completion's `sent` entry `[conn, seq, name]` names the call (and so the attempt) that
  sent command `seq` on `conn`. The audit line's command name must equal `name`; a mismatch is a
  disagreement and the line stays unattributed, because the numbering can no longer be trusted.
  An entry `[conn, seq, name, reply]` also says what the store answered a SET/SETNX (1 wrote, 0
  did not): the line attributed to it carries it (`AuditRecord.reply`) to the store model, which
  needs it where the call's one result says nothing of this command (a lease over several nodes).
- A `[0 lua]` line belongs to the nearest preceding `EVAL`/`EVALSHA` line.
- Transactions: the store shows a `MULTI`/`EXEC` transaction's queued commands only when `EXEC`
  runs them (Redis 6.2 lists them between `MULTI` and `EXEC`; a server may also list them right
  after `EXEC`), and never when the transaction did not run — `DISCARD`, an `EXEC` aborted by a
  command refused while queued (`EXECABORT`), or an `EXEC` whose `WATCH`ed key changed. So after
  an attributed `MULTI`, an `EXEC`/`DISCARD` line that comes before the queued commands takes
  the number of the history's `EXEC`/`DISCARD`; after a `DISCARD` the queued commands never ran;
  after an `EXEC` they are matched by name against the lines that follow from that connection,
  and taken as never run at the first line that does not match. Pipelines without a transaction
  are plain commands in order.
- Handshakes: redis-py sends its handshake (`HELLO`, `AUTH`, `CLIENT ...`, `SELECT`, a health
  check's `PING`) on a new connection before the marker, and a store may list it (Redis 6.2 lists
  `HELLO`). Commands a connection never numbers (`UNNUMBERED`: `HELLO`, `AUTH`, `CLIENT`, ...)
  take no number here either. A handshake-named line from address X that the connection bound to
  X has not numbered there (its `sent` lists no such command at that `seq`) is held, with any more
  such lines from X: when the next other line from X is a marker, they were that new connection's
  handshake (also when the new connection got an earlier one's client port, so X was still bound
  to that one), counted like the marker as a connection's lines (`handshakes`), in no call's
  `sent` list and not unattributed; otherwise each is judged as any line, in order (an
  `UNNUMBERED` one: unattributed, without a number).
- `"ECHO" "leasecheck:harness:<role>"` from address X: one of the harness's own connections
  (a fault's probe, its admin connection) got X, perhaps a moment after a worker connection gave
  it up. X is bound to no connection from there; the marker, the handshake-named lines held right
  before it and the lines that follow are unattributed.
- A line from an address no marker named (another client, the harness's connections) is
  unattributed. So is every line from a connection bound before a `# gap`: lines are missing
  there, so its numbering is lost.
- In a complete audit, a sent command that is missing never ran: that settles an `info` call, and
  it is expected when the call then retried on another connection (the first one was given up:
  timeout, reset, a healed partition); otherwise, for a call that got a reply, it is a disagreement.
- A numbered line no `sent` entry claims is an orphan. If its slot has exactly one call that never
  completed (the run was killed before the completion was written) and no call listed a later
  command of that connection, it is given to that call and reported as a problem; otherwise it is
  a disagreement.

Token strings are never compared: attribution is by attempt.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Final, Sequence

from leasecheck.protocol import (AUDIT_END_MARKER as END_MARKER, CONN_MARKER, HANDSHAKE as _HANDSHAKE,
                                HARNESS_MARKER, UNNUMBERED as _UNNUMBERED)

from leasecheck.checkers.read.audit import AuditRecord
from leasecheck.rundir import AUDIT
from leasecheck.checkers.read.ops import Op, slot_of
from leasecheck.events import FAIL, INFO, OK

# (`Final`s of this module: compiled, C statics, where the imported names are a dict look-up per use)
UNNUMBERED: Final = _UNNUMBERED
HANDSHAKE: Final = _HANDSHAKE
SCRIPT_CALLS: Final = {"EVAL", "EVALSHA", "EVAL_RO", "EVALSHA_RO", "FCALL", "FCALL_RO"}
TXN_END: Final = ("EXEC", "DISCARD")


class _Binding:
    """One audit address bound to a connection: the next command number, and a transaction
    whose end has not been seen (`txn_end`: the history's number of its EXEC/DISCARD) or whose
    queued commands may still follow its EXEC (`after`)."""
    __slots__ = ("conn", "seq", "txn_end", "after")
    conn: str
    seq: int
    txn_end: int | None
    after: list[int]

    def __init__(self, conn: str) -> None:
        self.conn, self.seq, self.txn_end, self.after = conn, 0, None, []


@dataclass
class Join:
    """What the join found. `attempt` and `op` (per audit record, same positions as the records)
    are filled only by `join()`; a streaming check takes them record by record from `Joiner`."""
    attempt: list[str | None] = field(default_factory=list)
    op: list[int | None] = field(default_factory=list)
    missing: dict[int, list[tuple]] = field(default_factory=dict)  # op -> [(conn, seq, name)]
    disagreements: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    mismatches: int = 0      # lines whose command name differs from the history's
    unattributed: int = 0    # command lines (markers aside) without an attempt
    not_run: int = 0         # queued commands of transactions that did not run
    handshakes: int = 0      # a new connection's handshake lines before its marker

    def uncovered(self, ops: list[Op], complete: bool) -> list[int]:
        """Ops whose effect the audit may not show: calls with a sent command that is not in
        the audit (in a complete audit an `info` call's missing command simply never ran) and,
        in an incomplete audit, calls that never completed (their sent lists are unknown)."""
        return [op.index for op in ops
                if (op.index in self.missing and not (complete and op.type == INFO))
                or (not complete and op.type is None)]


class Joiner:
    """Attribute audit records one at a time, in audit order.

    Calls come in with `add(op)` as their completions are read (they carry the `sent` lists);
    `history_done(never_completed)` says the history is over. `ready(rec)` tells whether `rec`
    can be attributed yet: a numbered line waits until the call that sent it has been added, a
    call has listed a later command of its connection, or the history is over (in the last two
    cases without a call of its own, it is an orphan). `feed(rec)` returns `(attempt, op)` (None, None
    when unattributed). A call whose every sent command was found is handed out once by
    `take_matched()`, and forgotten; `finish(complete)` returns the `Join` summary.
    Memory: the calls added and not yet matched, not the audit.
    """

    def __init__(self) -> None:
        self.out = Join()
        self.wanted: dict[str, dict[int, Op]] = {}   # conn -> {seq: the call that sent it}
        self.left: dict[int, int] = {}               # op index -> sent commands not yet found (when more than one)
        self.unmatched: dict[int, Op] = {}           # calls with sent commands not yet found
        self.matched: list[Op] = []                  # calls whose commands were all found
        self.done = False
        self.pending: dict[str, list[Op]] = {}      # slot -> calls that never completed
        self.never: list[Op] = []
        self.bound: dict[str, _Binding] = {}         # addr -> its connection
        self.horizon: dict[str, int] = {}            # conn -> the highest seq a completion listed
        self.script: tuple[str | None, Op | None] = (None, None)
        self.script_seen = False
        self.added = 0                               # calls added so far
        self.held: dict[str, list[AuditRecord]] = {}  # addr -> handshake lines before a marker?
        # A test may watch the attribution also where setup.py compiles this module: `feed(rec)`
        # then calls `watch(rec)` instead of `_feed(rec)`. (Not a bound method of its own kept
        # as an attribute: that would be a reference cycle, which keeps every claim the check
        # made alive until Python's cyclic collector walks them all.)
        self.watch: Callable[[AuditRecord], tuple[str | None, Op | None]] | None = None

    # -- the history side -------------------------------------------------------------------
    def add_late(self, op: Op) -> None:
        """``add`` of a ``late_sent`` event's call: its numbers are the connection's, but they set
        no horizon. It is written as its command is sent, while the slot's current call, whose
        own thread may have sent an earlier number on the same connection, has yet to complete
        (docs/history.md, "Calls that never completed")."""
        self.add(op, False)

    def add(self, op: Op, sets_horizon: bool = True) -> None:
        self.added += 1
        n = 0
        wanted, horizon = self.wanted, self.horizon
        # the entries that set the horizon: none of a late_sent's, nor those of a completion's
        # that a node's view joined from late_sent events (`Op.late`, at the end)
        upto = len(op.sent) - op.late if sets_horizon else 0
        i = 0
        for entry in op.sent:
            i += 1
            if type(entry) is not tuple or not (len(entry) == 3 or (len(entry) == 4 and entry[3] in (0, 1))):
                self.out.problems.append(f"{op.attempt} {op.f}: malformed sent entry {entry!r}")
                continue
            pair: tuple = entry            # (a tuple: compiled, indexed as one, not generically)
            conn, seq = pair[0], pair[1]
            if seq is None:
                continue
            if not isinstance(conn, str) or not isinstance(seq, int):
                self.out.problems.append(f"{op.attempt} {op.f}: malformed sent entry {entry!r}")
                continue
            key: Any = seq               # (boxed once: compiled, each dict operation would box it again)
            by_seq = wanted.get(conn)
            if by_seq is None:
                by_seq = wanted[conn] = {}
            elif key in by_seq:
                self.out.disagreements.append(f"{conn} seq {seq} is listed by two calls")
            by_seq[key] = op
            if i <= upto and seq > horizon.get(conn, -1):
                horizon[conn] = key
            n += 1
        if n:
            if n > 1:                    # (a call of one command, the common case, needs no count)
                self.left[op.index] = n
            self.unmatched[op.index] = op
        else:
            self.matched.append(op)      # nothing to wait for

    def history_done(self, never_completed: list[Op]) -> None:
        self.done = True
        self.never = never_completed
        for op in never_completed:
            self.pending.setdefault(slot_of(op.attempt), []).append(op)

    # -- the audit side ---------------------------------------------------------------------
    def ready(self, rec: AuditRecord) -> bool:
        binding = self.numbered_by(rec)
        return binding is None or self.numbers_ready(binding, rec.name)

    def numbered_by(self, rec: AuditRecord) -> _Binding | None:
        """The connection whose numbers decide `ready(rec)` — as long as only calls are added —
        or None when it is ready whatever is added: the history is over, the line is no numbered
        command of a bound address (never a script's line nor a gap: those are not bound; an
        UNNUMBERED line never takes a number), or it is a marker."""
        if self.done:
            return None
        binding = self.bound.get(rec.addr)
        if binding is None or rec.kind != "cmd" or rec.name in UNNUMBERED:
            return None
        if rec.name == "ECHO" and len(rec.argv) == 2 and (rec.argv[1].startswith(CONN_MARKER)
                                                          or rec.argv[1].startswith(HARNESS_MARKER)
                                                          or rec.argv[1] == END_MARKER):
            return None
        return binding

    def numbers_ready(self, binding: _Binding, name: str) -> bool:
        """`ready` of a command `name` that `binding` numbers (`numbered_by`): its call is in,
        or the history is over or has gone past it."""
        if self.done:
            return True
        conn, seq = binding.conn, binding.seq
        by_seq = self.wanted.get(conn)
        key: Any = seq                         # (boxed once)
        if by_seq is not None and key in by_seq:
            return True                        # the common case: its call is in
        if binding.after and by_seq is not None:
            s = binding.after[0]
            if s in by_seq and _sent_name(by_seq[s], conn, s) == name:
                return True    # a queued command listed after its EXEC
        return self.horizon.get(conn, -1) > seq

    def feed(self, rec: AuditRecord) -> tuple[str | None, Op | None]:
        """Attribute the next audit record (see the class docstring)."""
        watch = self.watch
        return self._feed(rec) if watch is None else watch(rec)

    def next_of(self, rec: AuditRecord, binding: _Binding, by_seq: dict[int, Op], op: Op) -> tuple[str | None, Op | None]:
        """`feed(rec)` of a line the caller found to be the next command of the connection bound
        to its address (`binding`, its numbers `by_seq`) and that command's call `op`: the
        engine's `ready` check has looked all three up already, so the common case looks none up
        again. Anything else is `_feed`'s."""
        name = rec.name
        if (not self.held and binding.txn_end is None and not binding.after and name != "ECHO"
                and name != "MULTI" and rec.kind == "cmd"):
            # `_feed`'s common case (no handshake lines held anywhere: none for this address)
            seq = binding.seq
            first = op.sent[0]
            number = first[1] if type(first) is tuple and len(first) >= 3 else None
            if type(number) is int:      # (compiled, compared natively: `seq` is not boxed for it)
                i: int = number
                same = i == seq
            else:
                same = number is not None and number == seq
            if same and first[0] == binding.conn and (first[2] == name or str(first[2]).upper() == name):
                binding.seq = seq + 1
                if len(first) == 4:
                    rec.reply = first[3]
                got = self._take(by_seq, first[1], op)   # (the entry's int object: none boxed)
                if name in SCRIPT_CALLS:
                    self.script, self.script_seen = got, True
                return got
        return self._feed(rec)

    def _feed(self, rec: AuditRecord) -> tuple[str | None, Op | None]:
        out = self.out
        if rec.kind != "cmd":           # a gap or a restart: every connection died / was lost
            self._release_held()
            self.bound.clear()
            self.script, self.script_seen = (None, None), False
            return None, None
        if rec.addr == "lua":
            if not self.script_seen:
                out.problems.append(f"{AUDIT}:{rec.line}: script command with no EVAL before it")
                out.unattributed += 1
                return None, None
            out.unattributed += self.script[0] is None
            return self.script
        name = rec.name
        held = self.held.get(rec.addr)
        if held is not None:
            if name == "ECHO" and len(rec.argv) == 2 and rec.argv[1].startswith(CONN_MARKER):
                out.handshakes += len(held)    # the new connection's handshake
                del self.held[rec.addr]
            elif name == "ECHO" and len(rec.argv) == 2 and rec.argv[1].startswith(HARNESS_MARKER):
                out.unattributed += len(held)  # the handshake of one of the harness's connections
                del self.held[rec.addr]
            elif name in HANDSHAKE and not self._numbered_here(self.bound.get(rec.addr), name):
                held.append(rec)               # more of it
                return None, None
            else:
                self._release(rec.addr)        # no handshake: a marker would have come next
        binding = self.bound.get(rec.addr)
        if (binding is not None and binding.txn_end is None and not binding.after
                and name != "ECHO" and name != "MULTI"):
            # The common case, short: the next command of a bound connection, first in its
            # call's `sent` list under the same name (as `_attribute` finds it).
            seq = binding.seq
            by_seq = self.wanted.get(binding.conn)
            op = by_seq.get(seq) if by_seq is not None else None
            if op is not None:
                first = op.sent[0]
                if (type(first) is tuple and len(first) >= 3 and first[0] == binding.conn
                        and first[1] == seq and (first[2] == name or str(first[2]).upper() == name)):
                    binding.seq = seq + 1
                    if len(first) == 4:
                        rec.reply = first[3]
                    got = self._take(by_seq, seq, op)
                    if name in SCRIPT_CALLS:
                        self.script, self.script_seen = got, True
                    return got
        if name == "ECHO" and len(rec.argv) == 2:
            arg = rec.argv[1]
            if arg.startswith(CONN_MARKER):
                self._close(binding)
                self.bound[rec.addr] = _Binding(arg[len(CONN_MARKER):])
                return None, None
            if arg.startswith(HARNESS_MARKER):
                # One of the harness's own connections got this address: it is no longer the
                # connection's that was bound here, and the lines from it are the harness's.
                self._close(binding)
                self.bound.pop(rec.addr, None)
                out.unattributed += 1
                return None, None
            if arg == END_MARKER:
                return None, None
        if name in HANDSHAKE and not self._numbered_here(binding, name):
            self.held.setdefault(rec.addr, []).append(rec)   # judged at the address's next line
            return None, None
        got = self._attribute(rec, name)
        if name in SCRIPT_CALLS:
            self.script, self.script_seen = got, True
        return got

    def _numbered_here(self, binding: _Binding | None, name: str) -> bool:
        """The connection bound to the line's address numbered a command `name` as its next
        (outside a transaction's bookkeeping, where every line goes to `_attribute`)."""
        if binding is None or name in UNNUMBERED:
            return False
        if binding.txn_end is not None or binding.after:
            return True
        by_seq = self.wanted.get(binding.conn)
        op = by_seq.get(binding.seq) if by_seq is not None else None
        return op is not None and _sent_name(op, binding.conn, binding.seq) == name

    def _close(self, binding: _Binding | None) -> None:
        """The connection bound there is done (its address re-bound, or the audit over): the
        queued commands of its last transaction that no line after its EXEC showed never ran
        (an EXEC whose WATCHed key changed, the connection's last)."""
        if binding is not None and binding.after:
            self._not_run(binding.conn, binding.after)
            binding.after = []

    def _release(self, addr: str) -> None:
        """The lines held on `addr` were no handshake (no marker followed): judge them in order."""
        for rec in self.held.pop(addr, ()):
            if rec.name in UNNUMBERED:
                self.out.unattributed += 1     # a seq-null send, or another client's
            else:
                self._attribute(rec, rec.name)

    def _release_held(self) -> None:
        for addr in list(self.held):
            self._release(addr)

    def _attribute(self, rec: AuditRecord, name: str) -> tuple[str | None, Op | None]:
        out = self.out
        binding = self.bound.get(rec.addr)
        if binding is None:
            out.unattributed += 1
            return None, None
        conn = binding.conn
        by_seq = self.wanted.get(conn)
        if binding.after:        # queued commands listed after their EXEC, or none at all
            s = binding.after[0]
            op = by_seq.get(s) if by_seq is not None else None
            if op is not None and _sent_name(op, conn, s) == name:
                binding.after.pop(0)
                return self._take(by_seq, s, op)
            self._not_run(conn, binding.after)
            binding.after = []
        seq = binding.seq
        if binding.txn_end is not None and name in TXN_END and seq < binding.txn_end:
            # The transaction ended before its queued commands were listed.
            queued, seq = list(range(seq, binding.txn_end)), binding.txn_end
            if name == "EXEC":
                binding.after = queued
            else:
                self._not_run(conn, queued)
        binding.seq = seq + 1
        if seq == binding.txn_end:
            binding.txn_end = None
        op = by_seq.get(seq) if by_seq is not None else None
        if op is None:
            # A call that listed a later command of this connection came after this one: no
            # call still to come (not even one that never completed) can have sent it.
            late = self.horizon.get(conn, -1) > seq
            return _orphan(out, rec, conn, seq, [] if late else self.pending.get(slot_of(conn), []))
        entry = _sent_entry(op, conn, seq)
        want = _upper(entry[2]) if entry is not None else ""
        if entry is None or want != name:      # the entry stays wanted: the call's command is not in the audit
            out.mismatches += 1
            out.unattributed += 1
            out.disagreements.append(
                f"{AUDIT}:{rec.line}: {conn} seq {seq} is {name} in the audit but "
                f"{want} in the history ({op.attempt} {op.f})")
            return None, None
        if name == "MULTI":
            binding.txn_end = _txn_end(by_seq or {}, conn, seq)
        if len(entry) == 4:
            rec.reply = entry[3]
        return self._take(by_seq, seq, op)

    def _take(self, by_seq: Any, seq: Any, op: Op) -> tuple[str | None, Op | None]:
        """Command `seq` of `op` is found: forget it; `op` is matched once all of its are."""
        del by_seq[seq]
        index: Any = op.index            # (boxed once: compiled, each dict look-up would box it again)
        more = self.left.get(index) if self.left else None   # (get and del, not pop: compiled, C calls)
        if more is None:
            left = 0
        else:
            del self.left[index]
            left = more - 1
        if left:
            self.left[index] = left
        else:
            del self.unmatched[index]
            self.matched.append(op)
        return op.attempt, op

    def _not_run(self, conn: str, seqs: list[int]) -> None:
        """Queued commands of a transaction that did not run: found, with no line of their own."""
        by_seq = self.wanted.get(conn) or {}
        for seq in seqs:
            op = by_seq.get(seq)
            if op is not None:
                self._take(by_seq, seq, op)
                self.out.not_run += 1

    def take_matched(self) -> Sequence[Op]:
        """The calls whose every sent command has been found since the last call (their
        effects are final once the next non-script line comes)."""
        if not self.matched:
            return ()
        out, self.matched = self.matched, []
        return out

    # -- the end ----------------------------------------------------------------------------
    def _missing_entries(self, op: Op, complete: bool) -> list[tuple]:
        """`op`'s sent commands not found in the audit (and, in a complete audit, not given up
        for a retry on another connection)."""
        missing = []
        for entry in op.sent:
            if not isinstance(entry, tuple) or len(entry) not in (3, 4) or not isinstance(entry[1], int):
                continue
            conn, seq, name = entry[:3]
            if (self.wanted.get(conn, {}).get(seq) is op
                    and not (complete and _superseded(op.sent, conn, seq))):
                missing.append((conn, seq, str(name).upper()))
        return missing

    def remaining(self) -> list[Op]:
        """Calls not handed out by `take_matched`: with commands never found, or never completed."""
        return sorted(list(self.unmatched.values()) + self.never, key=lambda op: op.index)

    def finish(self, complete: bool) -> Join:
        out = self.out
        self._release_held()
        if complete:
            for binding in self.bound.values():
                self._close(binding)
        for op in sorted(self.unmatched.values(), key=lambda op: op.index):
            missing = self._missing_entries(op, complete)
            if missing:
                out.missing[op.index] = missing
        if complete:
            _missing_in_complete_audit(out, {op.index: op for op in self.unmatched.values()})
        return out


def join(records: list[AuditRecord], ops: list[Op], complete: bool) -> Join:
    """Attribute each audit record to an attempt, with every call known beforehand; see the
    module docstring for the rules."""
    joiner = Joiner()
    for op in ops:
        if op.type is not None:
            joiner.add(op)
    joiner.history_done([op for op in ops if op.type is None])
    attempts: list[str | None] = []
    indices: list[int | None] = []
    for rec in records:
        attempt, got = joiner.feed(rec)
        attempts.append(attempt)
        indices.append(got.index if got is not None else None)
    out = joiner.finish(complete)
    out.attempt, out.op = attempts, indices
    return out


_UPPER: dict[str, str] = {}    # a sent entry's command name -> in upper case (a few dozen names)
_UPPER_MAX: Final = 4096       # (a history with more distinct names is upper-cased each time)


def _upper(name: Any) -> str:
    """`str(name).upper()`, kept for the names seen (one per audit line: no new string each time)."""
    if type(name) is str:
        up = _UPPER.get(name)
        if up is None:
            up = name.upper()
            if len(_UPPER) < _UPPER_MAX:
                _UPPER[name] = up
        return up
    return str(name).upper()


def _sent_entry(op: Op, conn: str, seq: int) -> tuple | None:
    """The entry `op`'s completion lists for (conn, seq)."""
    for entry in op.sent:
        if isinstance(entry, tuple) and len(entry) in (3, 4) and entry[0] == conn and entry[1] == seq:
            return entry
    return None


def _sent_name(op: Op, conn: str, seq: int) -> str:
    """The command name `op`'s completion lists for (conn, seq), upper case."""
    entry = _sent_entry(op, conn, seq)
    return str(entry[2]).upper() if entry is not None else ""


def _txn_end(by_seq: dict[int, Op], conn: str, multi: int) -> int | None:
    """The number of the EXEC or DISCARD that ends the transaction opened by MULTI `multi`."""
    ends = [s for s, op in by_seq.items() if s > multi and _sent_name(op, conn, s) in TXN_END]
    return min(ends) if ends else None


def _orphan(out: Join, rec: AuditRecord, conn: str, seq: int,
            pending: list[Op]) -> tuple[str | None, Op | None]:
    what = f"{AUDIT}:{rec.line}: {rec.name} from {conn} seq {seq} is in no sent list"
    if len(pending) == 1:
        op = pending[0]
        out.problems.append(f"{what}; given to {op.attempt} ({op.f} never completed)")
        return op.attempt, op
    out.unattributed += 1
    out.disagreements.append(what)
    return None, None


def _superseded(sent: Any, conn: str, seq: int) -> bool:
    """The call went on to send on another connection after (conn, seq): the client gave that
    connection up (timeout, reset, partition healed) and retried. In a complete audit a command
    from it that is not there never reached the store."""
    after = False
    for entry in sent:
        if not isinstance(entry, tuple) or len(entry) < 2:
            continue
        c, q = entry[0], entry[1]
        if after and c != conn:
            return True
        if (c, q) == (conn, seq):
            after = True
    return False


def _missing_in_complete_audit(out: Join, ops) -> None:
    """In a complete audit a command that is not there never ran: fine for an `info` call
    (that resolves it), a disagreement for `ok`/`fail` (the client saw a reply)."""
    for idx, entries in out.missing.items():
        op = ops[idx]
        if op.type in (OK, FAIL):
            listed = ", ".join(f"{c} seq {s} {n}" for c, s, n in entries)
            out.disagreements.append(f"{op.attempt} {op.f} ({op.type}) sent {listed}, "
                                     "but the complete audit has no such line")
