"""The text of a settings file (a scenario, a replayed run's config or schedule), or a one-line
`UsageError` naming what could not be read and where."""
from __future__ import annotations

from pathlib import Path

from leasecheck.harness.errors import UsageError


def read_utf8(path: Path, unreadable: str, fix: str, said: str = "") -> str:
    """The file's text. ``unreadable`` heads the message when the file cannot be opened (the
    system's reason follows in brackets); a byte that is not UTF-8 is named with its line, as
    ``SAID: PATH:LINE: not UTF-8 (byte 0x..); FIX`` (``said``, when given, names the option that
    named the file)."""
    try:
        raw = Path(path).read_bytes()
    except OSError as e:
        raise UsageError(f"{unreadable} ({e.strerror})") from None
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as e:
        line = raw[:e.start].count(b"\n") + 1
        raise UsageError(f"{said + ': ' if said else ''}{path}:{line}: not UTF-8 (byte {raw[e.start]:#04x}); {fix}") from None
