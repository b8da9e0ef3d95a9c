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

import re
from dataclasses import dataclass, field
from pathlib import Path

AUDIT = "audit.log"

_LINE = re.compile(r"(\d+)\.(\d+) \[(\d+) (\S+)\] (.*)", re.S)
_ARG = re.compile(r'"((?:[^"\\]|\\.)*)"(?: |\Z)', re.S)
_ESCAPE = re.compile(rb"\\(x[0-9a-fA-F]{2}|.)", re.S)
_SIMPLE = {b'"': b'"', b"\\": b"\\", b"n": b"\n", b"r": b"\r", b"t": b"\t", b"a": b"\a", b"b": b"\b"}


@dataclass(slots=True)
class AuditRecord:
    """One audit line: a command (kind "cmd"), a gap marker (kind "gap", reason in `note`) or a
    store restart (kind "restart")."""
    line: int
    time: float = 0.0
    db: int = 0
    addr: str = ""
    argv: list[str] = field(default_factory=list)
    kind: str = "cmd"
    note: str = ""

    @property
    def name(self) -> str:
        """The command name in upper case ("" for a gap)."""
        return self.argv[0].upper() if self.argv else ""


def unquote_args(text: str) -> list[str]:
    """Split and unquote MONITOR's argument list `"a" "b\\n"` -> ['a', 'b\\n']; ValueError if malformed."""
    if "\\" not in text and len(text) >= 2 and text[0] == '"' and text[-1] == '"':
        # Fast path: without escapes no quote can sit inside an argument.
        args = text[1:-1].split('" "')
        if not any('"' in a for a in args):
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


def parse_line(text: str, lineno: int = 0) -> AuditRecord:
    """Parse one command line (without its newline); ValueError if it is not one."""
    m = _LINE.fullmatch(text)
    if not m:
        raise ValueError("not '<time> [<db> <addr>] \"CMD\" ...'")
    sec, frac, db, addr, rest = m.groups()
    return AuditRecord(line=lineno, time=float(f"{sec}.{frac}"), db=int(db), addr=addr,
                       argv=unquote_args(rest))


def parse_audit(text: str, name: str = AUDIT) -> tuple[list[AuditRecord], bool, list[str]]:
    """Parse a whole audit text; return `(records, complete, problems)`."""
    records: list[AuditRecord] = []
    problems: list[str] = []
    lines = text.split("\n")
    torn = lines.pop() if lines else ""  # "" when the text ends with a newline
    ended = gaps = 0
    for lineno, line in enumerate(lines, 1):
        line = line.rstrip("\r")
        if not line.strip():
            continue
        if ended == 1 and not line.startswith("#"):
            problems.append(f"{name}:{lineno}: lines after '# end' (kept)")
            ended = 2
        if line.startswith("#"):
            directive = line[1:].strip()
            if directive == "end":
                ended = ended or 1
            elif directive.split(" ", 1)[0] == "gap":
                gaps += 1
                note = directive[3:].strip()
                records.append(AuditRecord(line=lineno, kind="gap", note=note))
                problems.append(f"{name}:{lineno}: gap in the audit ({note or 'no reason given'}):"
                                " commands executed then are missing")
            elif directive.split(" ", 1)[0] == "restart":
                # The harness killed and restarted the (volatile) store here, after draining the
                # audit: nothing is missing, and the store came back empty.
                records.append(AuditRecord(line=lineno, kind="restart", note=directive[7:].strip()))
            else:
                problems.append(f"{name}:{lineno}: unknown directive {line!r} ignored")
            continue
        if lineno == 1 and line in ("OK", "+OK"):
            continue
        try:
            records.append(parse_line(line, lineno))
        except ValueError as e:
            problems.append(f"{name}:{lineno}: unreadable line skipped ({e})")
    if torn.strip():
        if torn.strip() == "# end":
            ended = ended or 1
        else:
            problems.append(f"{name}:{len(lines) + 1}: torn last line (run was killed?)")
    if not ended:
        problems.append(f"{name}: no '# end' line: the audit was cut short")
    return records, bool(ended) and not gaps, problems


def load_audit(run_dir) -> tuple[list[AuditRecord], bool, list[str]] | None:
    """Read `<run_dir>/audit.log`; `(records, complete, problems)`, or None when there is none."""
    path = Path(run_dir) / AUDIT
    if not path.is_file():
        return None
    return parse_audit(path.read_text(encoding="utf-8", errors="surrogateescape"))
