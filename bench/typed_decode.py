"""How much of the checker's reading a typed decoder would save: generate the checker benchmark's
synthetic history (``checker_speed.generate``), then time, in one process, over the same lines:

- ``orjson_floor_s``: ``orjson.loads`` of each line — the history half of the checker's parse floor;
- ``orjson_fields_s``: the same, then the six fields the digest reads of a lease call's event
  (``type``, ``f``, ``attempt``, ``time``, ``key``, ``sent``) with ``dict.get``, as it does today;
- ``msgspec_generic_s``: ``msgspec.json.Decoder().decode`` of each line into dicts (another
  generic parse: the floor would not move with it);
- ``msgspec_typed_s``: ``msgspec.json.Decoder(Event).decode`` into a typed record (a
  ``msgspec.Struct`` with those fields, ``sent`` as tuples), then the same six fields as
  attributes — no dict per event, no `sent` lists to turn into tuples;
- ``records_s``: what the checker's pass does run as Python, each line read as its record's tuple
  (``records.row(records.decode(line))``, checkers/read/records.py);
- ``native_s``: what it does compiled, the same tuple from ``leasecheck._historyline.record``
  (None where setup.py did not build it).

Prints one JSON line per repetition with the CPU seconds of each, ``typed_to_floor``
(``msgspec_typed_s`` / ``orjson_floor_s``), and ``records_to_generic`` and ``native_to_generic``
(each over ``msgspec_generic_s``, the parser `checker_speed.py`'s floor takes on these files). Not a test. It measured whether msgspec should become
a dependency of leasecheck (it is one since 2026-12-06: the check's pass reads the common lines
into typed records, `checkers/read/records.py`, and `checker_speed.py`'s floor parses with the
faster of the two generic parsers).

    python bench/typed_decode.py --events 1000000 --repeat 3
"""
from __future__ import annotations

import argparse
import json
import platform
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Optional

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import orjson  # noqa: E402

try:
    import msgspec
except ImportError:
    sys.exit("bench/typed_decode.py needs msgspec: pip install msgspec")

from bench.checker_speed import generate  # noqa: E402


class Event(msgspec.Struct, gc=False):
    """The fields of a history event the digest reads on its hot path; the others are skipped."""
    time: int
    type: str
    process: str = ""
    index: int = -1
    f: Optional[str] = None
    attempt: Optional[str] = None
    key: Optional[str] = None
    value: Any = None
    sent: Optional[list[tuple[str, int, str]]] = None
    fence: Any = None
    error: Any = None
    config: Any = None


def _cpu(fn, lines) -> float:
    t = time.process_time()
    fn(lines)
    return round(time.process_time() - t, 4)


def orjson_floor(lines) -> None:
    loads = orjson.loads
    for line in lines:
        loads(line)


def orjson_fields(lines) -> int:
    loads, n = orjson.loads, 0
    for line in lines:
        e = loads(line)
        e.get("type"), e.get("f"), e.get("attempt"), e["time"], e.get("key")
        sent = e.get("sent")
        if sent:
            n += len(sent)
    return n


def msgspec_generic(lines) -> None:
    decode = msgspec.json.Decoder().decode
    for line in lines:
        decode(line)


def msgspec_typed(lines) -> int:
    decode, n = msgspec.json.Decoder(Event).decode, 0
    for line in lines:
        e = decode(line)
        e.type, e.f, e.attempt, e.time, e.key
        sent = e.sent
        if sent:
            n += len(sent)
    return n


def records(lines) -> None:
    from leasecheck.checkers.read.records import decode, row
    for line in lines:
        row(decode(line))


def native(lines) -> None:
    from leasecheck._historyline import record
    for line in lines:
        record(line)


def _built() -> bool:
    try:
        import leasecheck._historyline  # noqa: F401
    except ImportError:
        return False
    return True


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--events", type=int, default=1_000_000)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        run = Path(tmp) / "run"
        events = generate(run, args.events)
        lines = (run / "history.jsonl").read_bytes().splitlines(keepends=True)
    for _ in range(args.repeat):
        out = {"events": events, "orjson_floor_s": _cpu(orjson_floor, lines),
               "orjson_fields_s": _cpu(orjson_fields, lines), "msgspec_generic_s": _cpu(msgspec_generic, lines),
               "msgspec_typed_s": _cpu(msgspec_typed, lines)}
        out["records_s"] = _cpu(records, lines[1:])     # (the run's start is no record: read as a dict)
        out["native_s"] = _cpu(native, lines[1:]) if _built() else None
        out["typed_to_floor"] = round(out["msgspec_typed_s"] / out["orjson_floor_s"], 2)
        out["records_to_generic"] = round(out["records_s"] / out["msgspec_generic_s"], 2)
        out["native_to_generic"] = (round(out["native_s"] / out["msgspec_generic_s"], 2)
                                    if out["native_s"] is not None else None)
        out["machine"] = f"{platform.machine()}, {__import__('os').cpu_count()} cores, Python {platform.python_version()}"
        out["msgspec"], out["orjson"] = msgspec.__version__, orjson.__version__
        print(json.dumps(out), flush=True)


if __name__ == "__main__":
    main()
