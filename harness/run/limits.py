"""Does this run fit on this machine? Memory, processes, file descriptors and disk, checked in
preflight before anything starts (``check_limits``), each refusal one ``UsageError`` line with
the numbers and the fix.

The costs are measured, then given a margin; each constant says how. The machine's facts are read
through small functions (``available_memory``, ``process_limits``, ``fd_limit``, ``free_disk``)
that tests replace.
"""
from __future__ import annotations

import os
import resource
import shutil
from dataclasses import dataclass
from pathlib import Path

from leasecheck.harness.errors import UsageError
from leasecheck.harness.record.history import RESERVE
from leasecheck.harness.settings.config import RunConfig

MB = 2**20

# Memory. A worker process was 31.9-32.6 MB resident (VmRSS in /proc/PID/status), measured on
# 2026-12-01 (x86_64, Python 3.11) during `leasecheck run --time-limit 6` (token-cas, 8 workers x
# 1 slot) — the same 32 MB per worker as bench/RESULTS.md's scale run; with 16 slots a worker was
# 34.5 MB, so each more slot costs about 0.15 MB. Margin: 25% on the worker, the slot taken as 0.5 MB.
WORKER_MB = 32 * 1.25
SLOT_MB = 0.5
# The rest of a run, from the scale run (harness 106 MB, proxy 45 MB, redis-server 6 MB, checker
# 60 MB): the harness and the checker once, a proxy and a store per node.
HARNESS_MB = 200
NODE_MB = 64

# Processes and threads (RLIMIT_NPROC counts a user's threads; threads-max and pid_max the
# machine's). A worker had 4 threads with 1 slot and 19 with 16 (main, stdin watcher, history
# flusher, one per slot); a lease library may start a few more: counted as slots + 8. A store node
# is a redis-server (a few threads) and a proxy (asyncio: one thread, whatever the connections).
# The harness process: about 20 threads (nemesis, pump, audit readers, progress).
WORKER_THREADS = 8
NODE_THREADS = 8
HARNESS_THREADS = 32

# File descriptors. RLIMIT_NOFILE is per process. The harness holds 2 per worker (its stdin and
# stdout pipes; stderr goes to workers.log, closed after the start) and, per node, the store's
# process, a client and a MONITOR connection, the audit file, the proxy's pipes and the
# store-clock file (about 8); its own history part, logs and the Python runtime about 30 — read
# from the code, then checked: 18 open with 2 workers on one node. A worker holds one connection
# per slot and node, its history part, the slot board and its pipes: 21 open with 16 slots. A
# proxy (when the run has one) holds two sockets per connection it forwards: 2 per slot and worker.
HARNESS_FDS = 64
FDS_PER_WORKER = 2
FDS_PER_NODE = 16
WORKER_FDS = 32

# Disk. The history and the audit grow with the lease calls: the default scenario (8 workers x 1
# slot, one job key) wrote 1.44 MB in 6 s (30 KB per slot-second, measured 2026-12-01), 2 workers
# x 16 slots on 8 keys 4.05 MB in 5 s (25 KB); the 10-minute 64-worker scale run 401 MB of history
# and 150 MB of audit (14 KB per slot-second, its 2 cores saturated). Taken as 48 KB per
# slot-second (the highest, +50%), plus 16 MB for the report and the small files, plus what each
# process's history file reserves ahead of its lines (``RESERVE``: the workers' and the harness's).
BYTES_PER_SLOT_S = 48 * 1024
FIXED_BYTES = 16 * MB


@dataclass(frozen=True)
class Need:
    """What a run will use, estimated from its configuration."""
    memory_mb: float
    tasks: int
    harness_fds: int
    worker_fds: int
    proxy_fds: int
    disk_bytes: int


def nodes_of(cfg: RunConfig) -> int:
    """Store nodes (and proxies, at most one per node) the run starts."""
    if cfg.topology == "redlock":
        return cfg.nodes or 5
    if cfg.topology == "replicated":
        return 1 + (cfg.replicas or 1) + (cfg.sentinels or 3)
    return 1


def need(cfg: RunConfig) -> Need:
    nodes = nodes_of(cfg)
    return Need(
        memory_mb=cfg.workers * (WORKER_MB + (cfg.slots - 1) * SLOT_MB) + HARNESS_MB + nodes * NODE_MB,
        tasks=cfg.workers * (cfg.slots + WORKER_THREADS) + nodes * NODE_THREADS + HARNESS_THREADS,
        harness_fds=HARNESS_FDS + FDS_PER_WORKER * cfg.workers + FDS_PER_NODE * nodes,
        worker_fds=WORKER_FDS + cfg.slots * nodes,
        proxy_fds=WORKER_FDS + 2 * cfg.workers * cfg.slots,
        disk_bytes=int(BYTES_PER_SLOT_S * cfg.workers * cfg.slots * cfg.time_limit_s) + FIXED_BYTES
        + (cfg.workers + 1) * RESERVE)


# -- the machine's facts (tests replace these) -------------------------------------------------

def available_memory() -> int | None:
    """MemAvailable of /proc/meminfo in bytes (None where there is none)."""
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def _read_int(path: str) -> int | None:
    try:
        return int(Path(path).read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None


def process_limits() -> dict[str, int]:
    """The limits on new tasks (threads count): name -> how many more this run may start."""
    limits: dict[str, int] = {}
    soft, _ = resource.getrlimit(resource.RLIMIT_NPROC)
    if soft != resource.RLIM_INFINITY:
        limits["the process limit (ulimit -u)"] = soft
    running = _running_tasks()
    for name, path in (("kernel.threads-max", "/proc/sys/kernel/threads-max"),
                       ("kernel.pid_max", "/proc/sys/kernel/pid_max")):
        value = _read_int(path)
        if value is not None:
            limits[name] = value - running
    return limits


def _running_tasks() -> int:
    """Tasks on the machine now (/proc/loadavg's fourth field, running/total)."""
    try:
        return int(Path("/proc/loadavg").read_text().split()[3].split("/")[1])
    except (OSError, ValueError, IndexError):
        return 0


def fd_limit() -> int | None:
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    return None if soft == resource.RLIM_INFINITY else soft


def free_disk(path: str) -> tuple[str, int]:
    """The nearest existing folder of ``path`` and its free bytes."""
    p = Path(path).absolute()
    while not p.exists() and p != p.parent:
        p = p.parent
    return str(p), shutil.disk_usage(p).free


# -- the check -----------------------------------------------------------------------------------

def check_limits(cfg: RunConfig, say, proxy: bool = False) -> None:
    """Refuse a run that does not fit on this machine. ``say(field, shown)`` writes a setting as
    the user did (``preflight.Say``); ``proxy``: the workers go through a proxy."""
    n = need(cfg)
    size = f"{say('workers', str(cfg.workers))} ({cfg.slots} slot(s) each)"
    memory = available_memory()
    if memory is not None and n.memory_mb * MB > memory:
        most = max(0, int((memory / MB - HARNESS_MB - nodes_of(cfg) * NODE_MB) // (WORKER_MB + (cfg.slots - 1) * SLOT_MB)))
        raise UsageError(f"{size} needs about {_mb(n.memory_mb * MB)} of memory ({WORKER_MB:g} MB per worker "
                         f"process) but {_mb(memory)} is available (MemAvailable); use at most {most} "
                         "workers, or free memory")
    for name, left in process_limits().items():
        if n.tasks > left:
            raise UsageError(f"{size} needs about {n.tasks} processes and threads but {name} allows {max(left, 0)} "
                             f"more; lower {say.name('workers')}/{say.name('slots')} or raise the limit")
    fds = fd_limit()
    over = [(who, count) for who, count in (("the harness", n.harness_fds), ("each worker", n.worker_fds),
                                            ("the proxy", n.proxy_fds if proxy else 0)) if fds is not None and count > fds]
    if over:
        which, count = over[0]
        raise UsageError(f"{size}: {which} needs about {count} open files but the limit is {fds} "
                         f"(ulimit -n); lower {say.name('workers')}/{say.name('slots')} or raise it (ulimit -n {count * 2})")
    where, free = free_disk(cfg.results_dir)
    if n.disk_bytes > free:
        raise UsageError(f"{size} for {say('time_limit_s', f'{cfg.time_limit_s:g}s')} may write about "
                         f"{_mb(n.disk_bytes)} of history and audit but {where} has {_mb(free)} free; lower "
                         f"{say.name('time_limit_s')} or {say.name('workers')}, free space, or pick another "
                         f"{say.name('results_dir')}")


def _mb(b: float) -> str:
    return f"{b / 2**30:.1f} GB" if b >= 2**30 else f"{b / MB:.0f} MB"
