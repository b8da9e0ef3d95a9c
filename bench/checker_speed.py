"""How fast the checker reads a large run, as a ratio to the floor: generate a synthetic run
directory with about ``--events`` history events (and the matching audit), then, in the same
run, time (1) the *parse floor* — reading the history and the audit line by line with the fastest
parsers the checker already depends on (for each history line ``orjson.loads`` or msgspec's
generic decode into dicts, whichever takes less CPU on these files — both are timed, each time;
one ``bytes.split`` for each audit line) and doing nothing else — and (2) the whole check
(``leasecheck.checkers.check_run``) in a child process of its own, whose peak memory is the checker's alone,
twice: as installed (compiled by mypyc where setup.py could build it, see docs/how-to/install.md)
and as pure Python (``LEASECHECK_PURE_PYTHON=1``, which makes the package ignore the compiled modules).
Prints one JSON line per size and repetition with ``ratio_to_floor`` = check time / floor time
(wall clock) as installed, ``compiled`` (whether that was the compiled build), ``ratio_to_floor_pure``
(pure Python), and ``cpu_ratio_to_floor`` / ``cpu_ratio_to_floor_pure`` (the same with each side's
own CPU time, which other processes on a shared machine disturb less). The floor is a generic
parse; the checker reads the same files its own way, which knows their shape (where it runs
compiled, the history's common lines and the audit's commonest line in C, each faster than the
floor's parse of them): ``own_read_cpu_s`` is that reading alone (the history stream as the check
reads it and the audit stream, drained in the check's process after the check), and
``cpu_ratio_to_own_read`` the check's CPU over it — how much the check does beyond reading, by the
checker's own measure of reading. ``--repeat N`` measures the
same generated run N times; ``--no-pure`` skips the pure-Python check.

    python bench/checker_speed.py --events 1000000 --repeat 3
    python bench/checker_speed.py --events 10000,100000,1000000,10000000
    python bench/checker_speed.py --run-dir results/latest --repeat 3     # a real run instead

A generated run's calls are mostly acquires that lose (16 slots on 8 keys, 400 ms jobs): it has
about one claim per 460 events. A real run of zero-length jobs has one per 8 (and a reply recorded
with each SET): its model and its properties do more per event, so measure one of those too
(``--run-dir``; bench/RESULTS.md has both).

The synthetic run is what a real one looks like: 16 slots on 8 job keys, each claim attempt an
acquire (SET NX PX) and, when it wins, a job and a Lua compare-and-delete release; one job in ten
outlives its lease. Not a test: absolute numbers depend on the machine (machines of one kind
differ 3x); the ratio much less.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

PREFIX = "leasecheck:bench:"
T0_US = 1_795_000_000_000_000


def generate(run_dir: Path, events: int, seed: int = 1) -> int:
    rng = random.Random(seed)
    slots, keys, ttl_ms = 16, 8, 1000
    (run_dir / "history.d").mkdir(parents=True)
    hist = open(run_dir / "history.jsonl", "w")
    audit = open(run_dir / "audit.log", "w")
    audit.write("OK\n")
    cfg = {"key_prefix": PREFIX, "ttl_ms": ttl_ms, "max_overlap": None, "lease": "token-cas",
           "scenario": "bench", "workers": slots, "slots": 1, "jobs": keys, "seed": seed}
    (run_dir / "config.json").write_text(json.dumps(cfg))
    (run_dir / "store-clock.jsonl").write_text(json.dumps({"time": 0, "rtt_ns": 1000, "store_us": T0_US}) + "\n")
    n = 0
    index = 0

    last = 0

    def ev(t_us, process, type_, **kw):
        nonlocal n, index, last
        t_us = last = max(t_us, last)     # the history is in time order
        hist.write(json.dumps({"time": t_us * 1000, "process": process, "type": type_, "index": index, **kw},
                              separators=(",", ":")) + "\n")
        n += 1
        index += 1

    def line(t_us, addr, *args):
        audit.write(f"{(T0_US + t_us) / 1e6:.6f} [0 {addr}] " + " ".join(f'"{a}"' for a in args) + "\n")

    ev(0, "harness", "run_start", config=cfg)
    state = {}   # key -> (owner attempt, expiry_us)
    seq = [0] * slots
    for s in range(slots):
        line(1, f"127.0.0.1:{20000 + s}", "ECHO", f"leasecheck:conn:w{s}.s0.c0")
    t = 10
    attempt_no = [0] * slots
    pending = []  # (release time, slot, attempt, key, token)
    while n < events:
        t += rng.randint(20, 200)
        # releases due first
        pending.sort()
        while pending and pending[0][0] <= t:
            rt, s, attempt, key, token = pending.pop(0)
            proc, addr = f"w{s}.s0", f"127.0.0.1:{20000 + s}"
            ev(rt - 2, proc, "job_end", attempt=attempt, key=key, aborted=False)
            ev(rt - 1, proc, "invoke", f="release", attempt=attempt, key=key)
            owner = state.get(key)
            mine = owner is not None and owner[0] == attempt and owner[1] > rt
            line(rt, addr, "EVALSHA", "sha", "1", key, token)
            line(rt, "lua", "get", key)
            if mine:
                line(rt, "lua", "del", key)
                state.pop(key, None)
            ev(rt + 1, proc, "ok", f="release", attempt=attempt, key=key, value=mine,
               sent=[[f"w{s}.s0.c0", seq[s], "EVALSHA"]])
            seq[s] += 1
        s = rng.randrange(slots)
        if any(p[1] == s for p in pending):
            continue
        key = f"{PREFIX}job:{rng.randrange(keys)}"
        attempt = f"w{s}.s0.{attempt_no[s]}"
        attempt_no[s] += 1
        token = f"{rng.getrandbits(64):016x}"
        proc, addr = f"w{s}.s0", f"127.0.0.1:{20000 + s}"
        ev(t - 1, proc, "invoke", f="acquire", attempt=attempt, key=key)
        line(t, addr, "SET", key, token, "NX", "PX", str(ttl_ms))
        owner = state.get(key)
        won = owner is None or owner[1] <= t
        if won:
            state[key] = (attempt, t + ttl_ms * 1000)
        ev(t + 1, proc, "ok" if won else "fail", f="acquire", attempt=attempt, key=key, value=won,
           sent=[[f"w{s}.s0.c0", seq[s], "SET"]])
        seq[s] += 1
        if won:
            ev(t + 2, proc, "job_start", attempt=attempt, key=key)
            ev(t + 3, proc, "effect", attempt=attempt, key=key)
            dur = 1_600_000 if rng.random() < 0.1 else 400_000
            pending.append((t + dur, s, attempt, key, token))
    audit.write("# end\n")
    hist.close()
    audit.close()
    return n


def parse_floor(run_dir: Path) -> float:
    """Seconds to read history.jsonl and audit.log line by line, parsing each line with the
    cheapest tool the checker has, and nothing else."""
    return parse_floor_times(run_dir)[0]


def _history_parsers() -> dict:
    """The generic JSON parsers the checker depends on: each turns a line into dicts and lists."""
    import msgspec
    import orjson
    return {"orjson": orjson.loads, "msgspec": msgspec.json.Decoder().decode}


def floor_by_parser(run_dir: Path) -> tuple[str, float, float]:
    """(the faster parser's name, wall seconds, CPU seconds) of the parse floor."""
    return min(((name, *parse_floor_times(run_dir, name)) for name in _history_parsers()), key=lambda x: x[2])


def parse_floor_times(run_dir: Path, parser: str | None = None) -> tuple[float, float]:
    """`parse_floor`'s (wall seconds, CPU seconds): the history parsed by the faster of the
    checker's two generic parsers on these files (`parser` names one instead)."""
    if parser is None:
        return floor_by_parser(run_dir)[1:]
    loads = _history_parsers()[parser]
    c0 = time.process_time()
    t0 = time.perf_counter()
    with open(run_dir / "history.jsonl", "rb") as f:
        for raw in f:
            loads(raw)
    with open(run_dir / "audit.log", "rb") as f:
        for raw in f:
            raw.split(b" ", 3)
    return time.perf_counter() - t0, time.process_time() - c0


_CHILD = """
import json, resource, sys, time
sys.path.insert(0, sys.argv[2])
from leasecheck.checkers import check_run
from leasecheck.checkers.model import join
from leasecheck.checkers.read.audit import open_audit
from leasecheck.checkers.read.history import HistoryStream
c0 = time.process_time()
t0 = time.perf_counter()
result = check_run(sys.argv[1])
check_s = time.perf_counter() - t0
cpu_s = time.process_time() - c0
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
c0 = time.process_time()
for _ in HistoryStream(sys.argv[1]).records():
    pass
audit = open_audit(sys.argv[1])
for _ in audit if audit is not None else ():
    pass
print(json.dumps({"check_s": check_s, "cpu_s": cpu_s, "valid": result.get("valid"),
                  "compiled": not join.__file__.endswith(".py"), "peak_rss_mb": peak,
                  "own_read_cpu_s": time.process_time() - c0}))
"""


def check_in_child(run_dir: Path, pure: bool = False) -> dict:
    """Check the run in a fresh interpreter: its time and its own peak memory; with `pure`, with
    the pure-Python checker even where the compiled one is installed."""
    env = dict(os.environ)
    env.pop("LEASECHECK_PURE_PYTHON", None)
    if pure:
        env["LEASECHECK_PURE_PYTHON"] = "1"
    out = subprocess.run([sys.executable, "-c", _CHILD, str(run_dir), str(ROOT)], capture_output=True,
                         text=True, check=True, env=env)
    return json.loads(out.stdout.strip().splitlines()[-1])


def measure(events: int, repeat: int = 1, pure: bool = True):
    """Generate one run of about `events` events and yield one result per repetition: the floor
    and the check, measured back to back on the same files."""
    with tempfile.TemporaryDirectory() as d:
        run_dir = Path(d) / "run"
        g0 = time.perf_counter()
        n = generate(run_dir, events)
        gen_s = time.perf_counter() - g0
        yield from measure_run(run_dir, repeat, pure, n, gen_s)


def measure_run(run_dir: Path, repeat: int = 1, pure: bool = True, n: int | None = None, gen_s: float | None = None):
    """`measure` of a run directory that is there already (`--run-dir`: a real run)."""
    if n is None:
        n = sum(1 for _ in open(run_dir / "history.jsonl", "rb"))
    audit_lines = sum(1 for _ in open(run_dir / "audit.log", "rb"))
    for _ in range(repeat):
        floor_parser, floor_s, floor_cpu_s = floor_by_parser(run_dir)
        child = check_in_child(run_dir)
        row = {"events": n, "audit_lines": audit_lines, "floor_s": round(floor_s, 3), "floor_parser": floor_parser,
               "check_s": round(child["check_s"], 2), "ratio_to_floor": round(child["check_s"] / floor_s, 2),
               "compiled": child["compiled"],
               "floor_cpu_s": round(floor_cpu_s, 3), "check_cpu_s": round(child["cpu_s"], 2),
               "cpu_ratio_to_floor": round(child["cpu_s"] / floor_cpu_s, 2),
               "own_read_cpu_s": round(child["own_read_cpu_s"], 3),
               "cpu_ratio_to_own_read": round(child["cpu_s"] / child["own_read_cpu_s"], 2),
               "events_per_s": round(n / child["check_s"]),
               "checker_peak_rss_mb": round(child["peak_rss_mb"], 1)}
        if pure:
            p = check_in_child(run_dir, pure=True)
            if p["valid"] != child["valid"]:
                raise SystemExit(f"checker_speed: the pure-Python checker says valid={p['valid']}, "
                                 f"the installed one {child['valid']}: they must agree")
            row |= {"check_s_pure": round(p["check_s"], 2),
                    "ratio_to_floor_pure": round(p["check_s"] / floor_s, 2),
                    "check_cpu_s_pure": round(p["cpu_s"], 2),
                    "cpu_ratio_to_floor_pure": round(p["cpu_s"] / floor_cpu_s, 2),
                    "checker_peak_rss_mb_pure": round(p["peak_rss_mb"], 1)}
        yield row | {"valid": child["valid"], "generate_s": round(gen_s, 2) if gen_s is not None else None,
               "run_dir": None if gen_s is not None else str(run_dir),
               "machine": f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}",
               "load_avg_1m": round(os.getloadavg()[0], 2)}


def _bad(why: str) -> None:
    print(f"checker_speed: {why}", file=sys.stderr)
    sys.exit(64)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--events", default="1000000", help="one size or several, comma-separated")
    ap.add_argument("--repeat", type=int, default=1, help="measure each generated run this many times")
    ap.add_argument("--no-pure", action="store_true", help="skip the pure-Python check (LEASECHECK_PURE_PYTHON=1)")
    ap.add_argument("--run-dir", help="measure this stored run (history.jsonl and audit.log) instead of generated ones")
    a = ap.parse_args()
    if a.run_dir is not None:
        run = Path(a.run_dir)
        if not (run / "history.jsonl").is_file() or not (run / "audit.log").is_file():
            _bad(f"--run-dir {a.run_dir}: no history.jsonl and audit.log there; give a run directory "
                 "(results/<lease>/<stamp>/)")
        if a.repeat < 1:
            _bad("--repeat must be at least 1")
        for row in measure_run(run, a.repeat, pure=not a.no_pure):
            print(json.dumps(row), flush=True)
        return
    try:
        sizes = [int(x) for x in a.events.split(",")]
    except ValueError:
        _bad(f"--events {a.events!r}: give whole numbers, e.g. --events 10000,100000")
    if a.repeat < 1 or min(sizes) < 1:
        _bad("--events and --repeat must be at least 1")
    for size in sizes:
        for row in measure(size, a.repeat, pure=not a.no_pure):
            print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main()
