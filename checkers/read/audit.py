"""Parse the store's own execution log, `audit.log` (Redis MONITOR output; see docs/history.md).

One line per executed command::

    1795951565.822380 [0 127.0.0.1:60120] "SET" "lc:r1:job:0" "tok" "NX" "PX" "1000"
    1795951565.822545 [0 lua] "get" "lc:r1:job:0"

becomes an `AuditRecord` with the store's time in seconds, the db, the client address (or "lua"
for commands run by a script) and the unquoted arguments. Redis quotes arguments C-style
(`\\"`, `\\\\`, `\\n`, `\\r`, `\\t`, `\\a`, `\\b`, `\\xHH`); bytes that are not UTF-8 survive as
surrogate escapes, so no argument is ever changed or lost.

Other lines: the leading `OK` (the reply to MONITOR) is skipped; `# end` marks a complete audit;
`# gap <reason>` becomes a record of kind "gap" (the reader was disconnected, lines are missing);
`# restart <reason>` a record of kind "restart" (the harness restarted the store after draining the
audit: no line is missing, and every key is gone);
a last line without a newline is torn and dropped; any other unreadable line is reported with its
line number and skipped. An audit is complete only with `# end` and without gaps.
"""
from __future__ import annotations

import builtins
import re
from dataclasses import dataclass
from pathlib import Path
from types import FunctionType
from typing import TYPE_CHECKING, Any, Final, Iterable, Iterator

if TYPE_CHECKING:
    # compiled, a native 64-bit int (mypy's own dependency); only local variables are annotated
    # with it, which Python never evaluates: nothing to import when the module runs
    from mypy_extensions import i64

try:    # built with the compiled modules (setup.py); used only by them (``_native_command``)
    from leasecheck import _auditline
except ImportError:
    _auditline = None

from leasecheck.rundir import AUDIT



def _open_file(file, *args, **kw):
    """`builtins.open`, looked up when called."""
    return builtins.open(file, *args, **kw)


# `open` as a variable of this module that calls `builtins.open` when called, also where setup.py
# compiles the module (compiled, a builtin would be taken straight from builtins once): tests count
# the files the checker opens by replacing either.
open = _open_file  # noqa: A001

# A command line as `parse_line` accepts it: `<sec>.<frac> [<db> <addr>] <args>`.
_HEAD = re.compile(r"(\d+\.\d+) \[(\d+) ([^ ]+)\] (.*)", re.S)
_LINE = re.compile(r"(\d+\.\d+) \[(\d+) ([^ ]+)\] (.*)\n\Z")   # the same, a whole raw line
_ARG = re.compile(r'"((?:[^"\\]|\\.)*)"(?: |\Z)', re.S)
_ESCAPE = re.compile(rb"\\(x[0-9a-fA-F]{2}|.)", re.S)
# `str.isascii` once (compiled, a method call looks the method up on every line; this is a plain call)
_isascii: Final = str.isascii
# `_stamp_time`: a time's digits read as one integer are exact as a float up to 2**53, and so is
# each power of ten up to 10**22
_EXACT: Final = 1 << 53
_POW10: Final = tuple(float(10 ** k) for k in range(23))
_SIMPLE = {b'"': b'"', b"\\": b"\\", b"n": b"\n", b"r": b"\r", b"t": b"\t", b"a": b"\a", b"b": b"\b"}


@dataclass(slots=True, init=False)
class AuditRecord:
    """One audit line: a command (kind "cmd"), a gap marker (kind "gap", reason in `note`) or a
    store restart (kind "restart"). `name` is the command name in upper case ("" for a marker)."""
    line: int
    time: float
    db: int
    addr: str
    argv: list[str]
    kind: str
    note: str
    name: str
    reply: int | None    # set by the join: the client's reply to a SET/SETNX (1 wrote, 0 not), if known
    # how much later (ms) than `time` the command may have run: the gap to the next command line
    # (`with_slack`; 0.0 until that has seen it)
    slack_ms: float

    def __init__(self, line: int, time: float = 0.0, db: int = 0, addr: str = "", argv: list[str] | None = None,
                 kind: str = "cmd", note: str = "", name: str = "") -> None:
        # Written out (not generated) because the checker builds one per audit line.
        if argv is None:
            argv = []
        elif argv and not name:
            name = argv[0].upper()
        self.line, self.time, self.db, self.addr, self.argv = line, time, db, addr, argv
        self.kind, self.note, self.name = kind, note, name
        self.reply = None
        self.slack_ms = 0.0


def unquote_args(text: str) -> list[str]:
    """Split and unquote MONITOR's argument list `"a" "b\\n"` -> ['a', 'b\\n']; ValueError if malformed."""
    if "\\" not in text and len(text) >= 2 and text[0] == '"' and text[-1] == '"':
        # Fast path: without escapes no quote can sit inside an argument, so the quotes are
        # exactly the two around each argument.
        args = text[1:-1].split('" "')
        if text.count('"') == 2 * len(args):
            return args
    args, pos = [], 0
    while pos < len(text):
        m = _ARG.match(text, pos)
        if not m:
            raise ValueError(f"bad quoting at column {pos + 1}")
        args.append(_unescape(m.group(1)))
        pos = m.end()
    if not args:
        raise ValueError("no command")
    return args


def _unescape(body: str) -> str:
    if "\\" not in body:
        return body
    raw = body.encode("utf-8", "surrogateescape")

    def one(m: re.Match) -> bytes:
        code = m.group(1)
        if code[:1] == b"x" and len(code) == 3:
            return bytes([int(code[1:], 16)])
        if code in _SIMPLE:
            return _SIMPLE[code]
        raise ValueError(f"unknown escape \\{code.decode('utf-8', 'replace')}")

    return _ESCAPE.sub(one, raw).decode("utf-8", "surrogateescape")


def _stamp_time(raw: str, end: int) -> float:
    """`float(raw[:end])` where that is `<digits>.<digits>` (ASCII) below 2**53 as one integer
    and at most 22 digits after the dot, else -1.0. Read without building the string: the
    digits as an integer N and k after the dot, N / 10**k is a division of two floats that are
    exact, which IEEE rounds correctly, as `float` rounds the decimal correctly: the same float.
    (Summed as a native 64-bit int where compiled: below 2**53 times ten it cannot overflow.)"""
    digits: i64 = 0
    dot: i64 = -1
    i: i64 = 0
    stop: i64 = end
    while i < stop:
        c: i64 = ord(raw[i])
        if 48 <= c <= 57:
            digits = digits * 10 + (c - 48)
            if digits >= _EXACT:
                return -1.0
        elif c == 46 and dot < 0:
            dot = i
        else:
            return -1.0
        i += 1
    if dot <= 0 or dot >= stop - 1 or stop - 1 - dot > 22:
        return -1.0
    return float(digits) / _POW10[stop - 1 - dot]


def _number(raw: str, start: int, end: int) -> int:
    """`int(raw[start:end])` where that is ASCII digits (at least one), else -1."""
    if start >= end:
        return -1
    n = 0
    i = start
    while i < end:
        c = ord(raw[i])
        if c < 48 or c > 57:
            return -1
        n = n * 10 + (c - 48)
        i += 1
    return n


# Reading a command line in place (`_stamp_time`, `_number`) is quicker than splitting it up where
# this module is compiled (its functions are then built-in ones), and much slower run as Python,
# where each character read costs an interpreted step: only compiled is it done.
_IN_PLACE: Final = not isinstance(_number, FunctionType)


def _native_command() -> Any:
    """``leasecheck._auditline.command`` — the same in-place read of the commonest line, in one
    pass of C — where this module runs compiled and setup.py built it with the compiled modules;
    else None."""
    return _auditline.command if _IN_PLACE and _auditline is not None else None


_NATIVE: Final = _native_command()


def _command_head(raw: str) -> list[str] | None:
    """`_LINE`'s groups for a raw line of ASCII — [time, db, address, arguments] — found by one
    split instead of the regex (the same groups, or None: then the regex decides)."""
    parts = raw.split(" ", 3)
    if len(parts) != 4 or not raw.isascii():
        return None
    stamp, db, addr, rest = parts
    dot = stamp.find(".")
    if (0 < dot < len(stamp) - 1 and stamp[:dot].isdigit() and stamp[dot + 1:].isdigit()
            and len(db) > 1 and db[0] == "[" and db[1:].isdigit() and len(addr) > 1 and addr[-1] == "]"
            and rest[-1:] == "\n" and "\n" not in rest[:-1]):
        return [stamp, db[1:], addr[:-1], rest[:-1]]
    return None


def parse_line(text: str, lineno: int = 0) -> AuditRecord:
    """Parse one command line (without its newline); ValueError if it is not one."""
    parts = text.split(" ", 3)
    if len(parts) == 4:
        stamp, db, addr, rest = parts
        sec, dot, frac = stamp.partition(".")
        if (dot and sec.isdigit() and frac.isdigit() and db[:1] == "[" and db[1:].isdigit()
                and len(addr) > 1 and addr[-1] == "]"):
            argv = unquote_args(rest)
            return AuditRecord(lineno, float(stamp), int(db[1:]), addr[:-1], argv, name=argv[0].upper())
    raise ValueError("not '<time> [<db> <addr>] \"CMD\" ...'")


class AuditStream:
    """The audit's records one at a time, without holding the file in memory.

    `AuditStream(path)` reads a file, `AuditStream(text=...)` a string; each command record comes
    with its `slack_ms` (`with_slack`: one line is read ahead). After a full iteration,
    `complete`, `problems` and `lines` (command records) describe what was read; `bytes_read` of
    `total_bytes` measures progress. It can be iterated again (each pass starts afresh).
    """

    def __init__(self, path=None, text: str | None = None, name: str = AUDIT) -> None:
        self.path, self.text, self.name = path, text, name
        self.total_bytes = len(text) if text is not None else Path(path).stat().st_size
        self.bytes_read = 0
        self.complete = False
        self.problems: list[str] = []
        self.lines = 0

    def _raw_lines(self):
        pieces = self.text.split("\n")
        for piece in pieces[:-1]:
            yield piece + "\n"
        if pieces[-1]:
            yield pieces[-1]

    def __iter__(self):
        if self.text is not None:
            yield from with_slack(self._records(self._raw_lines()))
            return
        with open(self.path, encoding="utf-8", errors="surrogateescape", newline="\n") as f:
            yield from with_slack(self._records(f))

    def _records(self, lines: Iterable[str]) -> Iterator[AuditRecord]:
        name = self.name
        problems: list[str] = []
        self.problems, self.lines, self.bytes_read, self.complete = problems, 0, 0, False
        ended = gaps = 0
        lineno = 0
        line_head, head = _LINE.match, _HEAD.match   # (a function or class called by its own name: compiled, a C call)
        raw: str     # (typed: compiled, its methods are C calls)
        stamp: str
        db: str
        addr: str
        rest: str
        argv: list[str] | None
        native = _NATIVE
        in_place = _IN_PLACE and native is None
        got: Any
        t: float
        db_no: int
        where: str
        for raw in lines:
            lineno += 1
            size = len(raw)
            self.bytes_read += size
            # The commonest line of all, read without splitting it up first: an ASCII command line
            # `<sec>.<frac> [<db> <addr>] "A" "B" ...\n` without escapes, whose time fits
            # `_stamp_time`. The same record as the general fast path below makes of it: in one
            # call of C where it is built (`_native_command`), else in place.
            found = False
            if native is not None:
                got = native(raw)
                if got is not None:
                    t, db_no, where, argv = got[0], got[1], got[2], got[3]
                    found = True
            elif in_place:
                s1 = raw.find(" ")
                if s1 > 0 and _isascii(raw):
                    t = _stamp_time(raw, s1)
                    s2 = raw.find(" ", s1 + 1) if t >= 0.0 and s1 + 1 < size and ord(raw[s1 + 1]) == 91 else -1   # "["
                    s3 = raw.find(" ", s2 + 1) if s2 > 0 else -1
                    db_no = _number(raw, s1 + 2, s2) if s3 > 0 else -1
                    if (db_no >= 0 and s3 - s2 > 2 and ord(raw[s3 - 1]) == 93 and size - s3 > 3     # "]"
                            and ord(raw[s3 + 1]) == 34 and ord(raw[size - 2]) == 34                  # '"'
                            and raw.find("\n", s3 + 1) == size - 1 and raw.find("\\", s3 + 1) < 0):
                        argv = raw[s3 + 2:size - 2].split('" "')
                        if raw.count('"', s3 + 1) == 2 * len(argv):
                            where = raw[s2 + 1:s3 - 1]
                            found = True
            if found and argv is not None:
                if ended == 1:
                    problems.append(f"{name}:{lineno}: lines after '# end' (kept)")
                    ended = 2
                self.lines += 1
                first = argv[0]
                # (most lines are a SET: the constant, not a new upper-case copy)
                yield AuditRecord(lineno, t, db_no, where, argv, "cmd", "", "SET" if first == "SET" else first.upper())
                continue
            # The checker's hottest loop. The common line first, written out: an ASCII command
            # line whose arguments are quoted without escapes (what `_command_head` accepts, and
            # what the fast path of `unquote_args` splits), without building its groups.
            parts = raw.split(" ", 3)
            if len(parts) == 4 and _isascii(raw):
                stamp, db, addr, rest = parts
                dot, n = stamp.find("."), len(rest)
                if (n > 2 and rest[n - 2] == '"' and rest[0] == '"' and 0 < dot < len(stamp) - 1
                        and len(db) > 1 and db[0] == "[" and len(addr) > 1 and addr[-1] == "]"
                        and rest.find("\n") == n - 1 and "\\" not in rest
                        and stamp[:dot].isdigit() and stamp[dot + 1:].isdigit()
                        and (db == "[0" or db[1:].isdigit())):
                    argv = rest[1:n - 2].split('" "')
                    if rest.count('"') == 2 * len(argv):
                        if ended == 1:
                            problems.append(f"{name}:{lineno}: lines after '# end' (kept)")
                            ended = 2
                        self.lines += 1
                        yield AuditRecord(lineno, float(stamp), 0 if db == "[0" else int(db[1:]), addr[:-1],
                                          argv, "cmd", "", argv[0].upper())
                        continue
            groups = _command_head(raw)
            if groups is None:
                m = line_head(raw)
                if m is not None:
                    groups = list(m.groups())
            if groups is not None:
                # A whole command line (what parse_line accepts, newline and all).
                if ended == 1:
                    problems.append(f"{name}:{lineno}: lines after '# end' (kept)")
                    ended = 2
                stamp, db, addr, rest = groups
                if rest[-1:] == "\r":
                    rest = rest.rstrip("\r")
                argv = None
                if len(rest) >= 2 and rest[0] == '"' and rest[-1] == '"' and "\\" not in rest:
                    argv = rest[1:-1].split('" "')
                    if rest.count('"') != 2 * len(argv):
                        argv = None
                if argv is None:
                    try:
                        argv = unquote_args(rest)
                    except ValueError as e:
                        problems.append(f"{name}:{lineno}: unreadable line skipped ({e})")
                        continue
                self.lines += 1
                yield AuditRecord(lineno, float(stamp), 0 if db == "0" else int(db), addr, argv, "cmd", "",
                             argv[0].upper())
                continue
            if not raw.endswith("\n"):      # the last line, torn
                if raw.strip() == "# end":
                    ended = ended or 1
                elif raw.strip():
                    problems.append(f"{name}:{lineno}: torn last line (run was killed?)")
                break
            line = raw[:-1]
            if line[-1:] == "\r":
                line = line.rstrip("\r")
            if line[:1] != "#":
                if not line[:1].strip() and not line.strip():
                    continue
                if ended == 1:
                    problems.append(f"{name}:{lineno}: lines after '# end' (kept)")
                    ended = 2
                if lineno == 1 and line in ("OK", "+OK"):
                    continue
                try:
                    m = head(line)
                    if m is not None:     # parse_line, inlined: the checker's hottest loop
                        stamp, db, addr, rest = m.groups()
                        argv = unquote_args(rest)
                        rec = AuditRecord(lineno, float(stamp), int(db), addr, argv, "cmd", "", argv[0].upper())
                    else:
                        rec = parse_line(line, lineno)
                except ValueError as e:
                    problems.append(f"{name}:{lineno}: unreadable line skipped ({e})")
                    continue
                self.lines += 1
                yield rec
                continue
            directive = line[1:].strip()
            word = directive.split(" ", 1)[0]
            if directive == "end":
                ended = ended or 1
            elif word == "gap":
                gaps += 1
                note = directive[3:].strip()
                problems.append(f"{name}:{lineno}: gap in the audit ({note or 'no reason given'}):"
                                " commands executed then are missing")
                yield AuditRecord(line=lineno, kind="gap", note=note)
            elif word == "restart":
                # The harness killed and restarted the (volatile) store here, after draining the
                # audit: nothing is missing, and the store came back empty.
                yield AuditRecord(line=lineno, kind="restart", note=directive[7:].strip())
            else:
                problems.append(f"{name}:{lineno}: unknown directive {line!r} ignored")
        if not ended:
            problems.append(f"{name}: no '# end' line: the audit was cut short")
        self.complete = bool(ended) and not gaps


def with_slack(records: Iterable[AuditRecord]) -> Iterator[AuditRecord]:
    """`records` as they come, one line read ahead, each command line given `slack_ms`: how much
    later (ms) than its time the next command line's time is (0.0 when the next line is a marker,
    there is none, or its time is not later).

    A line's time is when the store fed the command to MONITOR, just before running it (Redis 6.2
    and Valkey 8.1 both do; the next line is fed after it ran, the store running one command at a
    time). The two are microseconds apart, unless the store was stopped or descheduled in between:
    a pause fault stops it for up to seconds, and the command fed just before the stop ran after
    it (docs/history.md, "When a command ran")."""
    rec: AuditRecord | None = None
    nxt: AuditRecord
    for nxt in records:
        if rec is not None:
            if rec.kind == "cmd" and nxt.kind == "cmd" and nxt.time > rec.time:
                rec.slack_ms = (nxt.time - rec.time) * 1000.0
            yield rec
        rec = nxt
    if rec is not None:
        yield rec


def parse_audit(text: str, name: str = AUDIT) -> tuple[list[AuditRecord], bool, list[str]]:
    """Parse a whole audit text; return `(records, complete, problems)`."""
    stream = AuditStream(text=text, name=name)
    records = list(stream)
    return records, stream.complete, stream.problems


def open_audit(run_dir) -> AuditStream | None:
    """A stream over `<run_dir>/audit.log`, or None when there is none."""
    path = Path(run_dir) / AUDIT
    return AuditStream(path) if path.is_file() else None


def load_audit(run_dir) -> tuple[list[AuditRecord], bool, list[str]] | None:
    """Read `<run_dir>/audit.log`; `(records, complete, problems)`, or None when there is none."""
    stream = open_audit(run_dir)
    if stream is None:
        return None
    records = list(stream)
    return records, stream.complete, stream.problems
