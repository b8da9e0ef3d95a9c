"""Just enough RESP to cut a byte stream into whole commands and whole replies.

The wire path (``leasecheck.harness.record.wire``) forwards a client's bytes to the store
unchanged; it only needs to know where each command ends (to number it before it is sent on)
and where each reply ends (to read a conditional create's answer and a refusal, and to drop the
reply to the marker it injects). Requests are RESP arrays of bulk strings or inline commands
(``PING\\r\\n``); replies are RESP2 or RESP3 (after ``HELLO 3``: maps, sets, doubles, booleans,
verbatim strings, big numbers, attributes and out-of-band pushes).
"""
from __future__ import annotations

_CRLF = b"\r\n"


def split_commands(buf: bytearray) -> tuple[list[tuple[list[bytes], bytes]], int]:
    """The whole commands at the start of ``buf`` as ``(args, raw bytes)``, and how many bytes
    they take (a partial command at the end stays for the next read)."""
    out, pos, n = [], 0, len(buf)
    while pos < n:
        start = pos
        if buf[pos] == 0x2A:                      # *N\r\n then N bulk strings
            end = buf.find(_CRLF, pos)
            if end < 0:
                break
            count = int(buf[pos + 1:end])
            pos = end + 2
            args: list[bytes] = []
            whole = True
            for _ in range(max(count, 0)):
                end = buf.find(_CRLF, pos)
                if end < 0:
                    whole = False
                    break
                if buf[pos] != 0x24:              # '$'
                    raise ValueError(f"protocol error: expected '$', got {bytes(buf[pos:pos + 1])!r}")
                size = int(buf[pos + 1:end])
                if end + 4 + size > n:
                    whole = False
                    break
                args.append(bytes(buf[end + 2:end + 2 + size]))
                pos = end + 4 + size
            if not whole:
                pos = start
                break
            if args:
                out.append((args, bytes(buf[start:pos])))
        else:                                      # an inline command: one line, words
            end = buf.find(b"\n", pos)
            if end < 0:
                break
            pos = end + 1
            words = bytes(buf[start:end]).strip().split()
            if words:
                out.append((words, bytes(buf[start:pos])))
    return out, pos


_LINE = frozenset(b"+-:_#,(")          # one line
_BULK = frozenset(b"$=!")              # a length, then that many bytes
_AGG = frozenset(b"*~>")               # N replies
_PAIRS = frozenset(b"%|")              # N pairs of replies


def reply_end(buf: bytearray, pos: int) -> int | None:
    """Where the reply starting at ``buf[pos]`` ends (an attribute ``|`` counts with the reply it
    decorates); None when it is not all there yet."""
    n = len(buf)
    if pos >= n:
        return None
    kind = buf[pos]
    end = buf.find(_CRLF, pos)
    if end < 0:
        return None
    if kind in _LINE:
        return end + 2
    if kind in _BULK:
        size = int(buf[pos + 1:end])
        if size < 0:
            return end + 2
        stop = end + 2 + size + 2
        return stop if stop <= n else None
    if kind in _AGG or kind in _PAIRS:
        count = int(buf[pos + 1:end])
        pos = end + 2
        for _ in range(max(count, 0) * (2 if kind in _PAIRS else 1)):
            pos = reply_end(buf, pos)
            if pos is None:
                return None
        if kind == 0x7C:                           # '|': the reply it decorates follows
            return reply_end(buf, pos)
        return pos
    raise ValueError(f"protocol error: unknown reply type {bytes([kind])!r}")


def is_push(raw: bytes) -> bool:
    """An out-of-band RESP3 push (``>``): no command's reply."""
    return raw[:1] == b">"


def error_text(raw: bytes) -> str | None:
    """The message of an error reply (``-ERR ...`` or a RESP3 blob error), else None."""
    if raw[:1] == b"-":
        return raw[1:].rstrip(b"\r\n").decode("utf-8", "replace")
    if raw[:1] == b"!":
        return raw.split(_CRLF, 1)[1][:-2].decode("utf-8", "replace")
    return None


def wrote(raw: bytes) -> int | None:
    """A SET/SETNX reply: 1 when the store wrote the key (``+OK``, ``:1``), 0 when it did not
    (a nil, ``:0``), None otherwise (an error, ``+QUEUED`` inside a transaction)."""
    if raw in (b"+OK\r\n", b":1\r\n"):
        return 1
    if raw in (b"$-1\r\n", b"_\r\n", b"*-1\r\n", b":0\r\n"):
        return 0
    return None
