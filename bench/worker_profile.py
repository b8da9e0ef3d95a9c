"""Where a worker's CPU goes per lease call, by role, against a bare redis-py loop in the same
process: the profile behind ``bench/throughput.py``'s ``cpu_ms_per_kop_by_role``.

    python bench/worker_profile.py [--seconds 5] [--keys 64] [--top 25]

One claim loop (``workloads/claim_loop.Slot``, the ``token-cas`` lease, no job time, no back-off)
runs in this process with everything a worker gives it — the audited connection, the send
tracker, the history writer and its flusher, the slot board, the hung-call watch — against a
store of its own, and a bare loop sends the same commands (SET NX PX, and the Lua
compare-and-delete when it wins) for as long. Each prints its CPU (``time.process_time``: every
thread of this process) per 1,000 store operations (``SET`` + ``EVALSHA`` counted by the store),
and both are repeated under ``cProfile`` with the thread's CPU clock (``time.thread_time``:
the loop's own thread, not its waits, nor the history's flusher thread): their own time
(``tottime``) summed per role, by the file each function is in (redis-py, the audited connection,
the history writer, ...), per 1,000 operations, side by side. The profiler's own overhead grows
with the number of Python calls, so it inflates the claim loop more than the bare loop: read the
shares and the differences, not the absolute figures (the CPU lines are measured without it). Last,
the functions by the own time the claim loop adds to the bare loop's (the same function in both:
the difference). With the compiled build (setup.py) the claim loop, the history writer, the slot
board, the hung-call watch and the audited connection's numbering are C: cProfile sees little of
their own time (it is counted under the loop's ``run`` and the ``Numbering`` methods); ``LEASECHECK_PURE_PYTHON=1`` profiles them as Python. Not a test.
"""
from __future__ import annotations

import argparse
import cProfile
import os
import platform
import pstats
import secrets
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import redis  # noqa: E402

from bench.cpu_window import store_ops  # noqa: E402
from leasecheck.harness.record.connection import SendTracker, make_client  # noqa: E402
from leasecheck.harness.record.history import HistoryWriter  # noqa: E402
from leasecheck.harness.run.host import default_store_bin  # noqa: E402
from leasecheck.harness.run.hung_watch import HungWatch, stops_of  # noqa: E402
from leasecheck.harness.run.slot_board import SlotBoard  # noqa: E402
from leasecheck.harness.settings.durations import parse_distribution  # noqa: E402
from leasecheck.harness.stores.embedded import EmbeddedStore  # noqa: E402
from leasecheck.workloads.claim_loop import Slot  # noqa: E402
from leasecheck.workloads.leases import load_lease  # noqa: E402
from leasecheck.workloads.leases.scripts import COMPARE_AND_DELETE  # noqa: E402
from leasecheck.workloads.stall import Stall  # noqa: E402

# role -> path fragments of the files whose functions' own time is that role's, and (compiled,
# setup.py) the classes whose methods cProfile lists as ``<method 'x' of 'Class' objects>``
ROLES = (
    ("audited connection", ("harness/record/connection.py", "harness/record/numbering.py",
                            "'Numbering' objects", "'SendTracker' objects")),
    ("history writer", ("harness/record/history.py", "leasecheck/events.py", "'CallLines' objects",
                        "'HistoryWriter' objects")),
    ("slot board", ("harness/run/slot_board.py", "'SlotBoard' objects")),
    ("hung-call watch", ("harness/run/hung_watch.py", "'HungWatch' objects")),
    ("claim loop", ("workloads/claim_loop.py", "workloads/stall.py", "harness/run/worker.py",
                    "harness/settings/durations.py", "'Slot' objects")),
    ("lease", ("workloads/leases/",)),
    ("redis-py", ("/redis/",)),
)
OTHER = "other (stdlib, C)"


def _role(filename: str, func: str = "") -> str:
    for role, parts in ROLES:
        if any(p in filename or p in func for p in parts):
            return role
    return OTHER


def run_slot(d: Path, port: int, keys: list[str], seconds: float) -> tuple[float, int]:
    """One slot as a worker builds it, for ``seconds``: (process CPU s, store operations)."""
    history = HistoryWriter(d / f"w0-{time.monotonic_ns()}.jsonl")
    tracker = SendTracker("w0.s0", on_late=lambda call, entry: None)
    client = make_client(tracker, "127.0.0.1", port)
    board = SlotBoard(d / f"slots-{time.monotonic_ns()}.bin", 1, 1, create=True)
    watch = HungWatch(history, 30.0, stops_of(Slot._call)).start()
    zero = parse_distribution("0s")
    record = board.record(0)
    tracker.on_sent = record.sent
    slot = Slot(process="w0.s0", history=history, tracker=tracker, client=client,
                lease_factory=load_lease("token-cas"), keys=keys, ttl_ms=1000, job_duration=zero,
                retry_delay=zero, seed=1, deadline_ns=history.now() + int(seconds * 1e9),
                stop=threading.Event(), record=record, stall=Stall())
    watch.follow("w0.s0", record, slot.current)
    probe = redis.Redis(port=port)
    ops0, cpu0 = store_ops(probe), time.process_time()
    slot.run()
    cpu, ops = time.process_time() - cpu0, store_ops(probe) - ops0
    watch.close()
    history.close()
    board.close()
    return cpu, ops


def run_bare(port: int, keys: list[str], seconds: float) -> tuple[float, int]:
    """``bench/throughput.py``'s bare loop, in this process: (process CPU s, store operations)."""
    r = redis.Redis(port=port)
    release = r.register_script(COMPARE_AND_DELETE)
    probe = redis.Redis(port=port)
    ops0, cpu0 = store_ops(probe), time.process_time()
    end, i = time.monotonic() + seconds, 0
    while time.monotonic() < end:
        key = keys[i % len(keys)]
        i += 7
        token = secrets.token_hex(16)
        if r.set(key, token, nx=True, px=1000):
            release(keys=[key], args=[token])
    return time.process_time() - cpu0, store_ops(probe) - ops0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=5.0)
    ap.add_argument("--keys", type=int, default=64)
    ap.add_argument("--top", type=int, default=25, help="functions listed by own time")
    a = ap.parse_args()
    if a.seconds < 1 or a.keys < 1:
        ap.exit(64, "error: give --seconds >= 1 and --keys >= 1\n")
    keys = [f"job:{i}" for i in range(a.keys)]
    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp)
        store = EmbeddedStore(default_store_bin(), d)
        store.start()
        try:
            bare_cpu, bare_ops = run_bare(store.port, keys, a.seconds)
            slot_cpu, slot_ops = run_slot(d, store.port, keys, a.seconds)
            bare_prof, slot_prof = cProfile.Profile(time.thread_time), cProfile.Profile(time.thread_time)
            bare_prof.enable()     # thread_time: the loop thread's CPU, not its waits
            _, bare_prof_ops = run_bare(store.port, keys, a.seconds)
            bare_prof.disable()
            slot_prof.enable()
            _, slot_prof_ops = run_slot(d, store.port, keys, a.seconds)
            slot_prof.disable()
        finally:
            store.stop()
    bare, slot = 1e6 * bare_cpu / bare_ops, 1e6 * slot_cpu / slot_ops
    print(f"# {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}, "
          f"load {os.getloadavg()[0]:.2f}")
    print(f"bare loop   CPU {bare:7.1f} ms per 1,000 ops ({bare_ops} ops)")
    print(f"claim loop  CPU {slot:7.1f} ms per 1,000 ops ({slot_ops} ops)  ratio to bare {slot / bare:.2f}")
    bare_roles, bare_rows = _by_role(bare_prof, bare_prof_ops)
    slot_roles, rows = _by_role(slot_prof, slot_prof_ops)
    print("under cProfile: the loop thread's own CPU time per 1,000 ops by role (claim loop, bare loop)")
    every = set(slot_roles) | {role for role, _ in ROLES}    # a role cProfile saw nothing of: 0.0
    for role in sorted(every, key=lambda r: -slot_roles.get(r, 0.0)):
        print(f"  {role:20s} {slot_roles.get(role, 0.0):7.1f} ms {bare_roles.get(role, 0.0):7.1f} ms")
    print(f"  {'total':20s} {sum(slot_roles.values()):7.1f} ms {sum(bare_roles.values()):7.1f} ms")
    print(f"top {a.top} functions of the claim loop by own time per 1,000 ops")
    for ms, role, name in rows[:a.top]:
        print(f"  {ms:7.1f} ms  {role:20s} {name}")
    bare_ms = {name: ms for ms, _, name in bare_rows}
    added = sorted(((ms - bare_ms.get(name, 0.0), ms, role, name) for ms, role, name in rows), reverse=True)
    print(f"top {a.top} functions by the own time the claim loop adds to the bare loop's, per 1,000 ops "
          "(added, claim loop, bare loop)")
    for more, ms, role, name in added[:a.top]:
        print(f"  {more:7.1f} ms {ms:7.1f} ms {bare_ms.get(name, 0.0):7.1f} ms  {role:20s} {name}")


def _by_role(prof: cProfile.Profile, ops: int) -> tuple[dict[str, float], list]:
    """Own time per 1,000 ops summed by role, and every function's, largest first."""
    by_role: dict[str, float] = {}
    rows = []
    for (filename, line, func), (_cc, _nc, tt, _ct, _callers) in pstats.Stats(prof).stats.items():
        role, ms = _role(filename, func), 1e6 * tt / ops
        by_role[role] = by_role.get(role, 0.0) + ms
        rows.append((ms, role, f"{Path(filename).name}:{line}({func})"))
    return by_role, sorted(rows, reverse=True)

if __name__ == "__main__":
    main()
