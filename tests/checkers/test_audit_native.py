"""leasecheck._auditline.command: the commonest audit line read in one pass of C, where setup.py
built it. It must make exactly the record the checker's in-place read makes of the same line
(checkers/read/audit.py: `_stamp_time`, `_number`, then the arguments split at `" "` with their
quotes counted), and refuse (None) every line that read refuses, which the checker then reads its
own way."""
import random

from leasecheck.checkers.read import audit
from leasecheck.checkers.read.audit import AuditStream
from tests.native import function

LINES = [
    '1795000000.000001 [0 127.0.0.1:20004] "ECHO" "leasecheck:conn:w4.s0.c0"\n',
    '1733512345.123456 [0 127.0.0.1:41234] "SET" "leasecheck:job:0" "ab12" "NX" "PX" "1000"\n',
    '1733512345.123457 [0 lua] "get" "leasecheck:job:0"\n',
    '1.5 [12 unix:/tmp/redis.sock] "EVALSHA" "e0e1" "1" "k" "tok"\n',
    '2.25 [0 127.0.0.1:1] "A" "" "B"\n',                     # an empty argument
    '2.25 [0 127.0.0.1:1] ""\n',                             # an empty command
    '2.25 [0 127.0.0.1:1] "A" "x" "y\n',                     # unbalanced: refused
    '2.25 [0 127.0.0.1:1] "A" "b\\"c"\n',                    # an escape: refused
    '2.25 [0 127.0.0.1:1] "SET" "clé" "v"\n',               # not ASCII: refused
    '2.25 [0 127.0.0.1:1] "A" "b" "c" "d" "e" "f" "g"',     # torn (no newline): refused
    '9007199254740993.0 [0 127.0.0.1:1] "A"\n',             # 2**53 + 1: refused (read as float())
    '1.00000000000000000000001 [0 127.0.0.1:1] "A"\n',      # 23 digits after the dot: refused
    '1.5 [123456789012345678901 127.0.0.1:1] "A"\n',        # a db of 21 digits: left to Python
    '1.5 [0 127.0.0.1:1] ' + " ".join(f'"{i}"' for i in range(70)) + "\n",   # 70 arguments: left to Python
    '1. [0 127.0.0.1:1] "A"\n', '.5 [0 127.0.0.1:1] "A"\n', '1.5 [x 127.0.0.1:1] "A"\n',
    '1.5 [0 127.0.0.1:1 "A"\n', '1.5 [0 127.0.0.1:1]  "A"\n', '# end\n', '\n', '',
]


def in_place(raw: str):
    """The in-place read of checkers/read/audit.py, step by step, with its own helpers."""
    size, s1 = len(raw), raw.find(" ")
    if not (s1 > 0 and raw.isascii()):
        return None
    t = audit._stamp_time(raw, s1)
    s2 = raw.find(" ", s1 + 1) if t >= 0.0 and s1 + 1 < size and raw[s1 + 1] == "[" else -1
    s3 = raw.find(" ", s2 + 1) if s2 > 0 else -1
    db = audit._number(raw, s1 + 2, s2) if s3 > 0 else -1
    if (db >= 0 and s3 - s2 > 2 and raw[s3 - 1] == "]" and size - s3 > 3 and raw[s3 + 1] == '"'
            and raw[size - 2] == '"' and raw.find("\n", s3 + 1) == size - 1 and raw.find("\\", s3 + 1) < 0):
        argv = raw[s3 + 2:size - 2].split('" "')
        if raw.count('"', s3 + 1) == 2 * len(argv):
            return t, db, raw[s2 + 1:s3 - 1], argv
    return None


def _command():
    return function("_auditline", "command", audit._NATIVE)


def test_the_c_reader_comes_with_the_compiled_audit_reader():
    compiled = not audit.__file__.endswith(".py")
    built = _command() is not None
    assert (audit._NATIVE is not None) == (compiled and built)


def _same(raw: str, a, b) -> bool:
    """The very same record (the same float), or C left a line of a db beyond 18 digits or of
    more than 64 arguments to the checker's other reads (which give the record the in-place read
    gives)."""
    if a is None and b is not None:
        return b[1] >= 10 ** 18 or len(b[3]) > 64
    return a == b and (a is None or repr(a[0]) == repr(b[0]))


def test_the_c_reader_makes_the_in_place_record_of_every_line():
    command = _command()
    if command is None:
        return
    for raw in LINES:
        assert _same(raw, command(raw), in_place(raw)), raw
    assert command(LINES[1]) == (1733512345.123456, 0, "127.0.0.1:41234",
                                 ["SET", "leasecheck:job:0", "ab12", "NX", "PX", "1000"])
    rng = random.Random(7)
    alphabet = '0123456789. []"\\\nSETlua:é'
    for _ in range(100_000):       # each line changed in up to three places
        chars = list(rng.choice(LINES[:6]))
        for _ in range(rng.randrange(4)):
            i = rng.randrange(len(chars) + 1)
            op = rng.randrange(3)
            if op == 0:
                chars.insert(i, rng.choice(alphabet))
            elif i < len(chars):
                if op == 1:
                    del chars[i]
                else:
                    chars[i] = rng.choice(alphabet)
        raw = "".join(chars)
        assert _same(raw, command(raw), in_place(raw)), raw


def test_a_stream_of_such_lines_reads_as_before():
    text = "".join(LINES[:8]) + LINES[12] + LINES[13] + "# end\n"
    records = list(AuditStream(text=text))
    assert [(r.time, r.db, r.addr, r.argv, r.name) for r in records if r.kind == "cmd"][:6] == [
        (1795000000.000001, 0, "127.0.0.1:20004", ["ECHO", "leasecheck:conn:w4.s0.c0"], "ECHO"),
        (1733512345.123456, 0, "127.0.0.1:41234", ["SET", "leasecheck:job:0", "ab12", "NX", "PX", "1000"], "SET"),
        (1733512345.123457, 0, "lua", ["get", "leasecheck:job:0"], "GET"),
        (1.5, 12, "unix:/tmp/redis.sock", ["EVALSHA", "e0e1", "1", "k", "tok"], "EVALSHA"),
        (2.25, 0, "127.0.0.1:1", ["A", "", "B"], "A"),
        (2.25, 0, "127.0.0.1:1", [""], ""),
    ]
    assert [(r.db, r.argv) for r in records if r.kind == "cmd"][-2:] == [
        (123456789012345678901, ["A"]), (0, [str(i) for i in range(70)])]
