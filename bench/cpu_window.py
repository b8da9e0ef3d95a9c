"""CPU seconds and store-side operations of a process tree over a window, from ``/proc`` and the
store's ``INFO commandstats`` (Linux).

On a shared machine wall-clock throughput swings 2-3x with other people's load, while the CPU time
a process tree spends per operation moves much less: so both sides of a comparison are measured as
CPU seconds per 1000 operations over the same kind of window. Operations are counted by the store
(``SET`` and ``EVAL``/``EVALSHA`` calls), so neither side pays anything on its own path to count.
"""
from __future__ import annotations

import os
import time

import redis

_TICK = os.sysconf("SC_CLK_TCK")
_COUNTED = ("cmdstat_set", "cmdstat_evalsha", "cmdstat_eval")


def _cpu_s(pid: int) -> float:
    """utime + stime of one process (all its threads), in seconds; 0 when it is gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / _TICK   # fields 14 and 15 of the whole line


def counters(pid: int) -> tuple[int, int, int, int, int]:
    """(user ticks, system ticks, minor page faults, voluntary switches, involuntary switches)
    of one process, summed over its threads (``/proc/PID/task/*/stat`` and ``status``); zeros
    when it is gone. A thread that ended before the read is missed: keep windows in the steady
    state."""
    user = system = faults = voluntary = involuntary = 0
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return 0, 0, 0, 0, 0
    for tid in tids:
        try:
            with open(f"/proc/{pid}/task/{tid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            with open(f"/proc/{pid}/task/{tid}/status") as f:
                status = f.read()
        except OSError:
            continue
        user += int(fields[11])
        system += int(fields[12])
        faults += int(fields[7])
        for line in status.splitlines():
            if line.startswith("voluntary_ctxt_switches:"):
                voluntary += int(line.split()[1])
            elif line.startswith("nonvoluntary_ctxt_switches:"):
                involuntary += int(line.split()[1])
    return user, system, faults, voluntary, involuntary


def group_nice(pid: int | str = "self") -> int | None:
    """The nice value of the process's scheduling group (``/proc/PID/autogroup``: with the kernel's
    autogroups, one group per session), None where there is none. A benchmark's floor runs in its
    session, the harness's workers each in one of their own, so a group reniced away from 0
    weighs one side against the other."""
    try:
        with open(f"/proc/{pid}/autogroup") as f:
            return int(f.read().split()[-1])
    except (OSError, ValueError, IndexError):
        return None


def minor_faults(pid: int) -> int:
    """The process's minor page faults so far (field 10 of ``/proc/PID/stat``; 0 when it is gone)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return int(f.read().rsplit(")", 1)[1].split()[7])
    except OSError:
        return 0


def memory(pid: int) -> dict[str, int]:
    """``/proc/PID/smaps_rollup`` as {field: kB} (``Rss``, ``Private_Dirty``, ...; empty when it is gone)."""
    out = {}
    try:
        with open(f"/proc/{pid}/smaps_rollup") as f:
            for line in f.read().splitlines()[1:]:
                name, value = line.split(":", 1)
                out[name] = int(value.split()[0])
    except OSError:
        pass
    return out


def cmdline(pid: int) -> str:
    """The process's command line, its arguments joined by spaces ("" when it is gone)."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().replace(b"\0", b" ").decode(errors="replace").strip()
    except OSError:
        return ""


def parent_cmdline(pid: int) -> str:
    """The command line of the process's parent ("" when either is gone)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            ppid = int(f.read().rsplit(")", 1)[1].split()[1])
    except (OSError, IndexError, ValueError):
        return ""
    return cmdline(ppid)


def _children(pid: int) -> list[int]:
    out = []
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return out
    for tid in tasks:
        try:
            with open(f"/proc/{pid}/task/{tid}/children") as f:
                out += [int(x) for x in f.read().split()]
        except OSError:
            pass
    return out


def tree(roots: list[int]) -> list[int]:
    """The processes ``roots`` and all their descendants."""
    seen, todo = [], list(roots)
    while todo:
        pid = todo.pop()
        if pid not in seen:
            seen.append(pid)
            todo += _children(pid)
    return seen


def roles_of(pids: list[int], roots: dict[int, str], known: dict[int, str] | None = None) -> dict[int, str]:
    """Each process's role: the one it had in ``known`` (what it was at the window's start), else
    its root's, else by its command line. A worker that ends inside the window is a zombie until
    reaped, with an empty command line: it keeps the role it started the window with."""
    known = known or {}
    return {pid: known[pid] if pid in known else _role(pid, roots) for pid in pids}


def _role(pid: int, roles: dict[int, str]) -> str:
    if pid in roles:
        return roles[pid]
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            cmd = f.read()
    except OSError:
        return "other"
    return "store" if b"redis-server" in cmd else "workers" if b"leasecheck.harness.run.worker" in cmd else "other"


def _machine_ticks() -> tuple[int, int, int]:
    """(idle + iowait, steal, all) clock ticks of every CPU so far (the first line of ``/proc/stat``;
    steal: time the hypervisor ran something else while one of this machine's CPUs had work)."""
    with open("/proc/stat") as f:
        ticks = [int(x) for x in f.readline().split()[1:9]]   # user nice system idle iowait irq softirq steal
    return ticks[3] + ticks[4], ticks[7], sum(ticks)


def _run_queue_wait_ns(pid: int) -> int:
    """How long the process's main thread has waited for a CPU while runnable (the second field of
    ``/proc/PID/schedstat``), in ns; 0 when it is gone."""
    try:
        with open(f"/proc/{pid}/schedstat") as f:
            return int(f.read().split()[1])
    except (OSError, IndexError, ValueError):
        return 0


def store_ops(client: redis.Redis) -> int:
    """Lease commands the store has run: ``SET`` + ``EVAL`` + ``EVALSHA`` calls."""
    stats = client.info("commandstats")
    return sum(int(stats.get(name, {}).get("calls", 0)) for name in _COUNTED)


def wait_started(client: redis.Redis, timeout_s: float = 60.0) -> None:
    """Wait until the store has run a lease command (``RuntimeError`` after ``timeout_s``)."""
    deadline = time.monotonic() + timeout_s
    while store_ops(client) == 0:
        if time.monotonic() > deadline:
            raise RuntimeError("the store ran no lease command")
        time.sleep(0.05)


def measure_window(roots: dict[int, str], client: redis.Redis, warmup_s: float, window_s: float,
                   started_timeout_s: float = 60.0) -> dict:
    """Wait until the store runs lease commands, then ``warmup_s``; measure over ``window_s`` the
    store's operations and the CPU of the trees under ``roots`` (pid -> role; descendants are
    "store", "workers" or "other" by their command line, each keeping the role it had at the start), in
    total and by role (processes that appear during the window count from zero, ones reaped inside it
    count nothing: keep the window inside the steady state).
    Also what makes wall clock and CPU disagree: ``idle_share``, the share of every CPU's time the
    machine spent idle (``/proc/stat``), ``steal_share``, the share the hypervisor ran something
    else while a CPU had work, and ``store_wait_share``, the share of the window the
    store spent runnable but waiting for a CPU (``/proc/PID/schedstat``). And, per role and per
    1,000 operations, where that CPU went (``per_kop_by_role``: ``user_ms`` and ``system_ms``,
    ``switches`` — the times a thread slept — and ``preempted`` — the times one was taken off a
    CPU while it could still run —, ``minor_faults``: ``counters``)."""
    wait_started(client, started_timeout_s)
    time.sleep(warmup_s)
    pids = tree(list(roots))
    role0 = roles_of(pids, roots)
    stores = [pid for pid in pids if role0[pid] == "store"]
    # The slow reads (every thread's counters, the process tree) stay outside the CPU samples,
    # which are taken right next to the store's counts: with 64 workers of five threads each, reading
    # the counters takes 60-120 ms, which would otherwise count as CPU the window's operations took.
    count0 = {pid: counters(pid) for pid in pids}
    wait0 = sum(_run_queue_wait_ns(pid) for pid in stores)
    idle0, steal0, all0 = _machine_ticks()
    cpu0 = {pid: _cpu_s(pid) for pid in pids}
    ops0, t0 = store_ops(client), time.monotonic()
    time.sleep(window_s)
    ops1, t1 = store_ops(client), time.monotonic()
    cpu1 = {pid: _cpu_s(pid) for pid in pids}
    idle1, steal1, all1 = _machine_ticks()
    wait1 = sum(_run_queue_wait_ns(pid) for pid in stores)
    for pid in tree(list(roots)):       # processes that appeared during the window count from zero
        if pid not in cpu1:
            cpu1[pid] = _cpu_s(pid)
    by_role: dict[str, float] = {}
    counted: dict[str, list[int]] = {}
    for pid, role in roles_of(list(cpu1), roots, role0).items():
        # a process reaped inside the window reads 0 (its CPU gone with it): it adds nothing, not minus its start
        by_role[role] = by_role.get(role, 0.0) + max(0.0, cpu1[pid] - cpu0.get(pid, 0.0))
        now, then = counters(pid), count0.get(pid, (0, 0, 0, 0, 0))
        sums = counted.setdefault(role, [0, 0, 0, 0, 0])
        for i in range(5):
            sums[i] += now[i] - then[i]
    cpu = sum(by_role.values())
    ops = ops1 - ops0
    return {"window_s": round(t1 - t0, 2), "window_ops": ops,
            # the CPUs' idle share over the window (the whole machine), and the share of the window
            # the store spent runnable but waiting for a CPU
            "idle_share": round((idle1 - idle0) / (all1 - all0), 3) if all1 > all0 else None,
            "steal_share": round((steal1 - steal0) / (all1 - all0), 3) if all1 > all0 else None,
            "store_wait_share": round((wait1 - wait0) / 1e9 / (t1 - t0), 3) if stores else None,
            "window_ops_per_s": round(ops / (t1 - t0)),
            "cpu_s": round(cpu, 2), "cpu_ms_per_kop": round(1e6 * cpu / ops, 1) if ops else None,
            "cpu_ms_per_kop_by_role": {role: round(1e6 * c / ops, 1) for role, c in sorted(by_role.items())}
            if ops else {},
            "per_kop_by_role": {role: _per_kop(c, ops) for role, c in sorted(counted.items())} if ops else {}}


def _per_kop(sums: list[int], ops: int) -> dict[str, float]:
    user, system, faults, voluntary, involuntary = sums
    k = ops / 1000
    return {"user_ms": round(1000 * user / _TICK / k, 1), "system_ms": round(1000 * system / _TICK / k, 1),
            "switches": round(voluntary / k, 1), "preempted": round(involuntary / k, 1),
            "minor_faults": round(faults / k, 1)}
