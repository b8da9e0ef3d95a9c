"""Instructions per store operation of the claim loop and of the bare loop, counted by valgrind:
the workers' cost without the noise of a shared machine.

    python bench/instructions.py [--modes bare,bare-lease,slot] [--seconds 2] [--top 30]

Each mode is one of ``bench/forked_loops.py``'s loops (``bare``: the floor's redis-py loop,
``slot``: a claim loop built as a worker builds it, ...), run in a process of its own under
``valgrind --tool=cachegrind --cache-sim=no`` against a store of this script's, twice: for
``--seconds`` and for twice as long (valgrind's seconds: it runs the interpreter some 50 times
slower; when a loaded machine let the longer run make barely more operations than the first, it
runs again four, then eight times as long). The instructions the second run executed beyond the first's, over the store operations it
made beyond the first's (``SET`` + ``EVALSHA``, ``INFO commandstats``), are the loop's
instructions per operation: start-up, imports and exit cancel out. A count does not move with the
machine's load or speed (the operations a loop makes in a window do, and the difference of two
runs absorbs that), so two builds or two commits compare to within about 1 % in one invocation of
each — where ``bench/throughput.py`` needs repeated pairs to see 5 %.

With ``--ll KB`` the runs also simulate the caches (cachegrind's ``--cache-sim=yes``: 32 kB first-level
caches and a last-level cache of KB kilobytes) and each mode's line gives ``ll_misses_per_op``, the
last-level misses per operation (instructions and data, read and written). With a small last level
(``--ll 256``) it stands for what a worker finds in the caches when 64 workers share two cores:
each operation starts where the others' evicted it, so what it costs grows with the memory and
code it touches, which the instruction count does not see (bench/RESULTS.md, "Item 2 ... eighth
session").

Printed per mode: ``instructions_per_op`` and ``ratio_to_<first mode>``; with ``--top N``, the N
functions (C functions of the interpreter, of redis-py's C parts, of the compiled modules; the
interpreted code is all ``_PyEval_EvalFrameDefault``) whose instructions per operation grew the
most against the first mode. Instructions are not time: a cache miss costs hundreds of them,
and with many workers on two cores most of a worker's time is misses (``bench/RESULTS.md``). Read
the counts as what the code does per operation, the throughput benchmark as what that costs.
Needs valgrind (``apt-get install valgrind``). Not a test.
"""
from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import redis  # noqa: E402

from bench.cpu_window import store_ops  # noqa: E402
from bench.forked_loops import MODES  # noqa: E402
from leasecheck.harness.run.host import default_store_bin  # noqa: E402
from leasecheck.harness.stores.embedded import EmbeddedStore  # noqa: E402

_REFS = re.compile(rb"I\s+refs:\s+([\d,]+)")
_LL = re.compile(rb"LL misses:\s+([\d,]+)")
_ROW = re.compile(r"^\s*([\d,]+) \(\s*[\d.]+%\)\s+(\S.*)$")


def child(mode: str, port: int, seconds: float) -> None:
    """In the process valgrind runs: one loop of ``mode`` for ``seconds``."""
    from bench.forked_loops import _child
    from bench.throughput import floor_keys
    keys = floor_keys(64)
    gc.collect()
    gc.freeze()   # as the fork server leaves its workers: the imports out of the collector's way
    with tempfile.TemporaryDirectory() as d:
        _child(mode, port, d, keys, seconds)


def count(mode: str, port: int, seconds: float, out: Path, ll_kb: int = 0) -> tuple[int, int, int]:
    """(instructions, last-level cache misses or 0 without ``ll_kb``, store operations) of one run
    of ``mode`` under cachegrind."""
    probe = redis.Redis(port=port)
    ops = store_ops(probe)
    caches = ["--cache-sim=yes", "--I1=32768,8,64", "--D1=32768,8,64", f"--LL={ll_kb * 1024},16,64"] if ll_kb \
        else ["--cache-sim=no"]
    p = subprocess.run(["valgrind", "--tool=cachegrind", *caches, f"--cachegrind-out-file={out}",
                        sys.executable, __file__, "--child", mode, "--port", str(port), "--seconds", str(seconds)],
                       cwd=ROOT, capture_output=True, timeout=600 + 60 * seconds)
    ops = store_ops(probe) - ops
    m, ll = _REFS.search(p.stderr), _LL.search(p.stderr)
    if p.returncode != 0 or m is None or (ll_kb and ll is None):
        tail = p.stderr.decode(errors="replace").strip().splitlines()[-3:]
        raise SystemExit(f"error: the {mode} loop under valgrind failed (rc {p.returncode}): {' / '.join(tail)}")
    misses = int(ll.group(1).replace(b",", b"")) if ll_kb and ll is not None else 0
    return int(m.group(1).replace(b",", b"")), misses, ops


def functions(first: Path, second: Path) -> dict[str, int]:
    """Instructions per function that ``second`` executed beyond ``first`` (cg_diff, cg_annotate)."""
    diff = first.with_suffix(".diff")
    with open(diff, "w") as f:
        subprocess.run(["cg_diff", str(first), str(second)], stdout=f, stderr=subprocess.DEVNULL, check=True)
    text = subprocess.run(["cg_annotate", "--auto=no", "--threshold=0", "--show=Ir", str(diff)],
                          capture_output=True, text=True).stdout
    out: dict[str, int] = {}
    for line in text.splitlines():
        m = _ROW.match(line)
        if m and "PROGRAM TOTALS" not in line:
            name = re.sub(r"^.*/(Python-[\d.]+|site-packages|mypyc)/", "", m.group(2))
            out[name] = out.get(name, 0) + int(m.group(1).replace(",", ""))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--modes", default="bare,bare-lease,slot", help=f"comma-separated, of {', '.join(MODES)}")
    ap.add_argument("--seconds", type=float, default=2.0, help="the shorter run (the longer is twice as long)")
    ap.add_argument("--top", type=int, default=0, help="list the N functions that grew most against the first mode")
    ap.add_argument("--ll", type=int, default=0, metavar="KB",
                    help="also simulate the caches with a last level of KB kilobytes and count its misses per operation")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    ap.add_argument("--port", type=int, help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child:
        child(a.child, a.port, a.seconds)
        return
    modes = a.modes.split(",")
    if any(m not in MODES for m in modes) or a.seconds < 1 or a.top < 0 or not (a.ll == 0 or 64 <= a.ll <= 1 << 20):
        ap.exit(64, f"error: modes of {', '.join(MODES)}; --seconds >= 1, --top >= 0, --ll 0 or 64 to 1048576 (kB)\n")
    missing = [t for t in ("valgrind", "cg_diff", "cg_annotate") if shutil.which(t) is None]
    if missing:
        ap.exit(69, f"error: {', '.join(missing)} not found; install valgrind (apt-get install valgrind)\n")
    from leasecheck.workloads import claim_loop
    build = "compiled" if claim_loop.__file__.endswith(".so") else "pure-python"
    machine = f"{platform.machine()}, Python {platform.python_version()}, {build} build"
    per_op: dict[str, float] = {}
    misses: dict[str, float] = {}
    per_function: dict[str, dict[str, float]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp)
        store = EmbeddedStore(default_store_bin(), d)
        store.start()
        try:
            for mode in modes:
                ir1, ll1, ops1 = count(mode, store.port, a.seconds, d / f"{mode}.0", a.ll)
                # The longer run: twice as long, or, where the machine's load slowed it so much
                # that it made barely more operations than the first (a loop runs for wall
                # seconds), longer again, up to eight times: any run longer than the first
                # cancels start-up and exit out the same way.
                longer = 2 * a.seconds
                ir2, ll2, ops2 = count(mode, store.port, longer, d / f"{mode}.1", a.ll)
                while ops2 < ops1 + max(10, ops1 // 5) and longer < 8 * a.seconds:
                    longer *= 2
                    ir2, ll2, ops2 = count(mode, store.port, longer, d / f"{mode}.1", a.ll)
                if ops2 <= ops1:
                    raise SystemExit(f"error: the {mode} loop made no more operations in runs of up to "
                                     f"{longer:g} s than in one of {a.seconds:g} s ({ops1} then {ops2}); "
                                     "give --seconds more")
                per_op[mode] = (ir2 - ir1) / (ops2 - ops1)
                line = {"mode": mode, "instructions_per_op": round(per_op[mode]), "ops": [ops1, ops2],
                        f"ratio_to_{modes[0]}": round(per_op[mode] / per_op[modes[0]], 3)}
                if a.ll:
                    misses[mode] = (ll2 - ll1) / (ops2 - ops1)
                    line.update({"ll_kB": a.ll, "ll_misses_per_op": round(misses[mode]),
                                 f"ll_ratio_to_{modes[0]}": round(misses[mode] / misses[modes[0]], 3)})
                line["machine"] = machine
                print(json.dumps(line), flush=True)
                if a.top:
                    per_function[mode] = {k: v / (ops2 - ops1) for k, v in
                                          functions(d / f"{mode}.0", d / f"{mode}.1").items()}
        finally:
            store.stop()
    if a.top:
        base = per_function[modes[0]]
        for mode in modes[1:]:
            mine = per_function[mode]
            grew = sorted(set(base) | set(mine), key=lambda k: base.get(k, 0.0) - mine.get(k, 0.0))[:a.top]
            print(json.dumps({"mode": mode, "against": modes[0], "grew_most": [
                {"function": k, "per_op": round(mine.get(k, 0.0)), f"per_op_{modes[0]}": round(base.get(k, 0.0))}
                for k in grew]}), flush=True)


if __name__ == "__main__":
    main()
