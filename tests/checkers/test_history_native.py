"""leasecheck._historyline.record: the history's commonest lines read as their records' tuples in
one pass of C, where setup.py built it. Whatever tuple it makes must be exactly the one the
checker's other read makes of the same line (`records.row(records.decode(line))`), and it may
leave a line to that read (None) — never read a line the other read refuses."""
import random
from pathlib import Path

import msgspec
import orjson

from leasecheck.checkers.read import history
from leasecheck.checkers.read.records import ATTEMPT, KIND, ROW, UNSET, decode, row
from leasecheck.events import ACQUIRE, INVOKE, JOB_END, OK
from tests.native import changed, function

DATA = Path(__file__).parent / "data"

COMMON = [
    b'{"time":63000,"process":"w2.s0","type":"invoke","index":1,"f":"acquire","attempt":"w2.s0.0","key":"k:4"}\n',
    b'{"time":65000,"process":"w2.s0","type":"ok","index":2,"f":"acquire","attempt":"w2.s0.0","key":"k:4",'
    b'"value":true,"sent":[["w2.s0.c0",0,"SET",1]]}\n',
    b'{"time":66000,"process":"w2.s0","type":"job_start","index":3,"attempt":"w2.s0.0","key":"k:4"}\n',
    b'{"time":67000,"process":"w2.s0","type":"effect","index":4,"attempt":"w2.s0.0","key":"k:4"}\n',
    b'{"time":70000,"process":"w2.s0","type":"job_end","attempt":"w2.s0.0","key":"k:4","aborted":false,"index":5}\n',
    b'{"time":71000,"process":"w2.s0","type":"fail","f":"release","attempt":"w2.s0.0","key":"k:4","value":false,'
    b'"sent":[["w2.s0.c0",1,"EVALSHA"],["w2.s0.c1",null,"GET"]],"fence":12,"index":6}',
    b'{"time":-5,"type":"ok","f":"renew","attempt":null,"value":null,"sent":[],"index":0}\n',
    b'{"type":"invoke","time":0,"f":"effect","attempt":"a","value":3}',       # the type first, no newline
    b'{"time":1,"type":"ok","f":"effect","attempt":"a","sent":null,"fence":null}\n',
    b'{"time":1,"type":"invoke","f":"acquire","attempt":"a","value":7,"fence":3,"aborted":true}\n',  # kept by none
]
ODD = [
    b'{"time": 1,"type":"invoke","f":"acquire"}\n',                   # whitespace
    b'{"time":1.0,"type":"invoke","f":"acquire"}\n',                  # not an integer
    b'{"time":1e3,"type":"invoke","f":"acquire"}\n',
    b'{"time":01,"type":"invoke","f":"acquire"}\n',                   # not JSON
    b'{"time":1234567890123456789012,"type":"invoke","f":"acquire"}\n',   # beyond 18 digits
    b'{"time":1,"type":"invoke","f":"acquire","attempt":"a\\"b"}\n',  # an escape
    b'{"time":1,"type":"invoke","f":"acquire","attempt":"cl\xc3\xa9"}\n',  # not ASCII
    b'{"time":1,"type":"invoke","f":"acquire","zzz":1}\n',            # a field no record keeps
    b'{"time":1,"type":"invoke","f":"acquire","f":"release"}\n',      # a key twice
    b'{"time":1,"type":"job_start","f":"acquire","attempt":"a"}\n',   # a job event that names a call
    b'{"time":1,"type":"job_start","f":null,"attempt":"a"}\n',
    b'{"time":1,"type":"ok","attempt":"a"}\n',                        # a call without its name
    b'{"time":1,"type":"ok","f":"frobnicate","attempt":"a"}\n',
    b'{"time":1,"type":"info","f":"acquire","attempt":"a"}\n',        # no record of that type
    b'{"time":1,"type":"ok","f":"acquire","sent":[["c",1,"SET",[1]]]}\n',   # a nested value
    b'{"time":1,"type":"ok","f":"acquire","sent":["c"]}\n',           # an entry that is no array
    b'{"time":1,"type":"ok","f":"acquire","value":{"a":1}}\n',
    b'{"time":1,"type":"ok","f":"acquire","index":"7"}\n',
    b'{"time":1,"type":"ok","f":"acquire","attempt":5}\n',
    b'{"time":1,"type":"ok","f":"acquire",}\n', b'{"time":1,"type":"ok","f":"acquire"}}\n', b'{}\n', b'\n', b'',
    b'[1]\n', b'{"time":1,"type":"ok","f":"acquire"} \n', b'{"time":1,"type":"ok","f":"acquire"',
]


def _record():
    return function("_historyline", "record", history._NATIVE)


def _reference(line: bytes):
    try:
        return row(decode(line))
    except (msgspec.DecodeError, msgspec.ValidationError):
        return None


def _same(a, b) -> bool:
    """Equal, with the same types all the way down (JSON's true is no 1)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, (tuple, list)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    return a is b or a == b


def test_the_c_reader_comes_with_the_compiled_history_reader():
    compiled = not history.__file__.endswith(".py")
    assert (history._NATIVE is not None) == (compiled and _record() is not None)


def test_the_c_reader_makes_the_records_tuple_of_every_common_line_and_leaves_the_others():
    record = _record()
    if record is None:
        return
    for line in COMMON:
        want = _reference(line)
        assert want is not None and _same(record(line), want), line
    for line in ODD:
        assert record(line) is None, line
    got = record(COMMON[1])
    assert got == (OK, 65000, 2, "w2.s0", "w2.s0.0", "k:4", ACQUIRE, True, [("w2.s0.c0", 0, "SET", 1)], UNSET, UNSET)
    assert got[KIND] is OK and got[ROW.index("f")] is ACQUIRE and record(COMMON[0])[KIND] is INVOKE
    assert record(COMMON[4])[KIND] is JOB_END and record(COMMON[4])[ROW.index("aborted")] is False
    assert record(COMMON[0])[ATTEMPT] is record(COMMON[2])[ATTEMPT], "one object for one text"


def test_on_real_histories_and_changed_lines_the_c_reader_agrees_with_the_decoder():
    record = _record()
    if record is None:
        return
    stored = [line for d in sorted(DATA.iterdir()) if (d / "history.jsonl").is_file()
              for line in (d / "history.jsonl").read_bytes().splitlines(keepends=True)]
    lines = stored + [orjson.dumps(orjson.loads(line)) + b"\n" for line in stored]   # and as the harness writes them
    common = 0
    for line in lines:
        got, want = record(line), _reference(line)
        if want is not None and b'": ' not in line:
            assert got is not None, line      # compact lines (the harness's own) all take the quick path
            common += 1
        assert got is None or _same(got, want), line
    assert common > 400
    rng = random.Random(11)
    alphabet = b'0123456789-.,:[]{}" \\nulltruefalse\xc3eE'
    samples = [line for line in lines[len(stored):] if _reference(line) is not None] + COMMON   # compact ones
    for _ in range(100_000):       # each line changed in up to three places
        line = changed(rng, rng.choice(samples), alphabet)
        got = record(line)
        assert got is None or _same(got, _reference(line)), line
