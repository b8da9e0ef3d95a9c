"""Attribute audit lines to lease calls (docs/history.md, "Attribution: `sent`").

The rules, in audit order:

- `"ECHO" "leasecheck:conn:<conn>"` from address X binds X to connection `<conn>`; the following
  lines from X are that connection's commands `seq` 0, 1, 2, ... (the marker is not numbered).
  A later marker from the same address re-binds it.
- A history completion's `sent` entry `[conn, seq, name]` names the call (and so the attempt) that
  sent command `seq` on `conn`. The audit line's command name must equal `name`; a mismatch is a
  disagreement and the line stays unattributed, because the numbering can no longer be trusted.
- A `[0 lua]` line belongs to the nearest preceding `EVAL`/`EVALSHA` line.
- A line from an address no marker named (another client, the harness's admin connection) is
  unattributed. So is every line from a connection bound before a `# gap`: lines are missing
  there, so its numbering is lost.
- In a complete audit, a sent command that is missing never ran: that settles an `info` call, and
  it is expected when the call then retried on another connection (the first one was given up:
  timeout, reset, a healed partition); otherwise, for a call that got a reply, it is a disagreement.
- A numbered line no `sent` entry claims is an orphan. If its slot has exactly one call that never
  completed (the run was killed before the completion was written), it is given to that call and
  reported as a problem; otherwise it is a disagreement.

Token strings are never compared: attribution is by attempt.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from .audit import AuditRecord
from .ops import Op, slot_of

CONN_MARKER = "leasecheck:conn:"
END_MARKER = "leasecheck:audit-end"
SCRIPT_CALLS = {"EVAL", "EVALSHA", "EVAL_RO", "EVALSHA_RO", "FCALL", "FCALL_RO"}


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

    def uncovered(self, ops: list[Op], complete: bool) -> list[int]:
        """Ops whose effect the audit may not show: calls with a sent command that is not in
        the audit (in a complete audit an `info` call's missing command simply never ran) and,
        in an incomplete audit, calls that never completed (their sent lists are unknown)."""
        return [op.index for op in ops
                if (op.index in self.missing and not (complete and op.type == "info"))
                or (not complete and op.type is None)]


class Joiner:
    """Attribute audit records one at a time, in audit order: `feed(rec)` returns the record's
    `(attempt, op index)` (None, None when unattributed); `finish(complete)` returns the `Join`
    summary. Holds one entry per sent command, not the records."""

    def __init__(self, ops: list[Op]) -> None:
        self.ops = ops
        self.out = Join()
        # conn -> {seq: op index}; a found entry is stored as ~index (negative)
        self.wanted: dict[str, dict[int, int]] = {}
        for op in ops:
            for entry in op.sent:
                try:
                    conn, seq, name = entry
                except (TypeError, ValueError):
                    self.out.problems.append(f"{op.attempt} {op.f}: malformed sent entry {entry!r}")
                    continue
                if seq is None:
                    continue
                if not isinstance(conn, str) or not isinstance(seq, int):
                    self.out.problems.append(f"{op.attempt} {op.f}: malformed sent entry {entry!r}")
                    continue
                by_seq = self.wanted.setdefault(conn, {})
                if seq in by_seq:
                    self.out.disagreements.append(f"{conn} seq {seq} is listed by two calls")
                by_seq[seq] = op.index
        self.pending: dict[str, list[int]] = {}   # slot -> ops that never completed
        for op in ops:
            if op.type is None:
                self.pending.setdefault(slot_of(op.attempt), []).append(op.index)
        self.bound: dict[str, list] = {}          # addr -> [conn, next seq]
        self.script: tuple[str | None, int | None] | None = None   # the last EVAL's attribution

    def feed(self, rec: AuditRecord) -> tuple[str | None, int | None]:
        out = self.out
        if rec.kind != "cmd":           # a gap or a restart: every connection died / was lost
            self.bound.clear()
            self.script = None
            return None, None
        if rec.addr == "lua":
            if self.script is None:
                out.problems.append(f"audit.log:{rec.line}: script command with no EVAL before it")
                out.unattributed += 1
                return None, None
            out.unattributed += self.script[0] is None
            return self.script
        name = rec.name
        if name == "ECHO" and len(rec.argv) == 2:
            arg = rec.argv[1]
            if arg.startswith(CONN_MARKER):
                self.bound[rec.addr] = [arg[len(CONN_MARKER):], 0]
                return None, None
            if arg == END_MARKER:
                return None, None
        got = self._attribute(rec, name)
        if name in SCRIPT_CALLS:
            self.script = got
        return got

    def _attribute(self, rec: AuditRecord, name: str) -> tuple[str | None, int | None]:
        out = self.out
        binding = self.bound.get(rec.addr)
        if binding is None:
            out.unattributed += 1
            return None, None
        conn, seq = binding
        binding[1] += 1
        by_seq = self.wanted.get(conn)
        hit = by_seq.get(seq) if by_seq is not None else None
        if hit is None:
            return _orphan(out, rec, conn, seq, self.pending.get(slot_of(conn), []), self.ops)
        idx = hit if hit >= 0 else ~hit
        op = self.ops[idx]
        want = _sent_name(op, conn, seq)
        if want != name:
            out.mismatches += 1
            out.unattributed += 1
            out.disagreements.append(
                f"audit.log:{rec.line}: {conn} seq {seq} is {name} in the audit but "
                f"{want} in the history ({op.attempt} {op.f})")
            return None, None
        by_seq[seq] = ~idx
        return op.attempt, idx

    def finish(self, complete: bool) -> Join:
        out = self.out
        for op in self.ops:
            for entry in op.sent:
                if not isinstance(entry, tuple) or len(entry) != 3 or not isinstance(entry[1], int):
                    continue
                conn, seq, name = entry
                if (self.wanted.get(conn, {}).get(seq) == op.index       # listed here, not found
                        and not (complete and _superseded(op.sent, conn, seq))):
                    out.missing.setdefault(op.index, []).append((conn, seq, str(name).upper()))
        if complete:
            _missing_in_complete_audit(out, self.ops)
        return out


def join(records: list[AuditRecord], ops: list[Op], complete: bool) -> Join:
    """Attribute each audit record to an attempt; see the module docstring for the rules."""
    joiner = Joiner(ops)
    attempts, indices = [], []
    for rec in records:
        attempt, idx = joiner.feed(rec)
        attempts.append(attempt)
        indices.append(idx)
    out = joiner.finish(complete)
    out.attempt, out.op = attempts, indices
    return out


def _sent_name(op: Op, conn: str, seq: int) -> str:
    """The command name `op`'s completion lists for (conn, seq), upper case."""
    for entry in op.sent:
        if isinstance(entry, tuple) and len(entry) == 3 and entry[0] == conn and entry[1] == seq:
            return str(entry[2]).upper()
    return ""


def _orphan(out: Join, rec: AuditRecord, conn: str, seq: int, pending: list[int],
            ops: list[Op]) -> tuple[str | None, int | None]:
    what = f"audit.log:{rec.line}: {rec.name} from {conn} seq {seq} is in no sent list"
    if len(pending) == 1:
        op = ops[pending[0]]
        out.problems.append(f"{what}; given to {op.attempt} ({op.f} never completed)")
        return op.attempt, op.index
    out.unattributed += 1
    out.disagreements.append(what)
    return None, None


def _superseded(sent: list, conn: str, seq: int) -> bool:
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


def _missing_in_complete_audit(out: Join, ops: list[Op]) -> None:
    """In a complete audit a command that is not there never ran: fine for an `info` call
    (that resolves it), a disagreement for `ok`/`fail` (the client saw a reply)."""
    for idx, entries in out.missing.items():
        op = ops[idx]
        if op.type in ("ok", "fail"):
            listed = ", ".join(f"{c} seq {s} {n}" for c, s, n in entries)
            out.disagreements.append(f"{op.attempt} {op.f} ({op.type}) sent {listed}, "
                                     "but the complete audit has no such line")
