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
    """Per audit record (same positions as the records): the attempt and op index, or None."""
    attempt: list[str | None]
    op: list[int | None]
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
                or (not complete and op.done is None)]


def join(records: list[AuditRecord], ops: list[Op], complete: bool) -> Join:
    """Attribute each audit record to an attempt; see the module docstring for the rules."""
    out = Join([None] * len(records), [None] * len(records))
    wanted: dict[tuple[str, int], tuple[int, str]] = {}
    for op in ops:
        for entry in op.sent:
            try:
                conn, seq, name = entry
            except (TypeError, ValueError):
                out.problems.append(f"{op.attempt} {op.f}: malformed sent entry {entry!r}")
                continue
            if seq is None:
                continue
            if (conn, seq) in wanted:
                out.disagreements.append(f"{conn} seq {seq} is listed by two calls")
            wanted[(conn, seq)] = (op.index, str(name).upper())
    pending = {}  # slot -> ops that never completed
    for op in ops:
        if op.done is None:
            pending.setdefault(slot_of(op.attempt), []).append(op.index)

    found: set[tuple[str, int]] = set()
    bound: dict[str, list] = {}   # addr -> [conn, next seq]
    last_script: int | None = None
    for i, rec in enumerate(records):
        if rec.kind in ("gap", "restart"):  # every connection died with the store / was lost
            bound.clear()
            last_script = None
            continue
        if rec.addr == "lua":
            if last_script is None:
                out.problems.append(f"audit.log:{rec.line}: script command with no EVAL before it")
            else:
                out.attempt[i], out.op[i] = out.attempt[last_script], out.op[last_script]
            out.unattributed += out.attempt[i] is None
            continue
        if rec.name in SCRIPT_CALLS:
            last_script = i
        if rec.name == "ECHO" and len(rec.argv) == 2:
            if rec.argv[1].startswith(CONN_MARKER):
                bound[rec.addr] = [rec.argv[1][len(CONN_MARKER):], 0]
                continue
            if rec.argv[1] == END_MARKER:
                continue
        binding = bound.get(rec.addr)
        if binding is None:
            out.unattributed += 1
            continue
        conn, seq = binding
        binding[1] += 1
        hit = wanted.get((conn, seq))
        if hit is None:
            _orphan(out, i, rec, conn, seq, pending.get(slot_of(conn), []), ops)
        elif hit[1] != rec.name:
            out.mismatches += 1
            out.unattributed += 1
            out.disagreements.append(
                f"audit.log:{rec.line}: {conn} seq {seq} is {rec.name} in the audit but "
                f"{hit[1]} in the history ({ops[hit[0]].attempt} {ops[hit[0]].f})")
        else:
            found.add((conn, seq))
            out.op[i] = hit[0]
            out.attempt[i] = ops[hit[0]].attempt
    for (conn, seq), (idx, name) in wanted.items():
        if (conn, seq) not in found and not (complete and _superseded(ops[idx].sent, conn, seq)):
            out.missing.setdefault(idx, []).append((conn, seq, name))
    if complete:
        _missing_in_complete_audit(out, ops)
    return out


def _orphan(out: Join, i: int, rec: AuditRecord, conn: str, seq: int, pending: list[int],
            ops: list[Op]) -> None:
    what = f"audit.log:{rec.line}: {rec.name} from {conn} seq {seq} is in no sent list"
    if len(pending) == 1:
        op = ops[pending[0]]
        out.op[i], out.attempt[i] = op.index, op.attempt
        out.problems.append(f"{what}; given to {op.attempt} ({op.f} never completed)")
    else:
        out.unattributed += 1
        out.disagreements.append(what)


def _superseded(sent: list, conn: str, seq: int) -> bool:
    """The call went on to send on another connection after (conn, seq): the client gave that
    connection up (timeout, reset, partition healed) and retried. In a complete audit a command
    from it that is not there never reached the store."""
    after = False
    for entry in sent:
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
