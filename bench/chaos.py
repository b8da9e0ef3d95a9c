"""Chaos of the harness itself: SIGKILL one of its parts at a random moment of a random short run
with faults, N times, and count what went wrong.

    python bench/chaos.py --kills 30            # from the repository root
    python bench/chaos.py --kills 4 --json      # the CI test's run: one JSON line of counts

Each kill starts ``leasecheck run`` (a random lease, 2-3 workers, 3-5 s, a random fault among
pause:holder, pause:store, clock:store, latency, partition, evict), waits until its workers run,
sleeps a random part of the time limit and kills one target, in turn:

- ``harness``: the ``leasecheck run`` process (SIGKILL);
- ``worker``: one worker process (SIGKILL);
- ``store``: the redis-server the run started (SIGKILL);
- ``proxy``: the embedded proxy process (SIGKILL; the run is given ``--proxy``);
- ``audit``: the audit's MONITOR connection (a thread of the harness: ``CLIENT KILL TYPE monitor``);
- ``clock``: the clock sampler's connection (a thread of the harness: ``CLIENT KILL`` of the
  connection whose last command was ``TIME``).

After each: the run's own output and ``leasecheck check RUN_DIR`` must hold no traceback, the
check must give a verdict (0, 1, 2) or a one-line refusal (64), and a run cut short (harness,
worker or store killed before its time limit) must not be VALID. Then ``leasecheck cleanup``
runs, and what the run recorded is looked up with psutil: a process it started still alive (its
workers by the pids in the history, its store and proxy by the ports in ``config.json``), one of
them stopped (SIGSTOP), a libfaketime file still skewed, a fault ledger still there, a port still
held. The counts are printed at the end; every one but the kills should be 0.
"""
from __future__ import annotations

import argparse
import json
import os
import random
import re
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import psutil
import redis

from leasecheck.harness.run.fork_server import forked_role

ROOT = Path(__file__).resolve().parents[1]
TARGETS = ("harness", "worker", "store", "proxy", "audit", "clock")
FAULTS = ("pause:holder", "pause:store", "clock:store", "latency", "partition", "evict")
LEASES = ("naive-del", "token-cas")
CUT = ("harness", "worker", "store")        # a kill of one of these cuts the run short
BUSY_RETRIES = 20                           # a machine shared with other runs may lack memory for a while
SETTLE_S = 20.0                             # orphans' grace (3 s) + a client's timeout, with room


def leasecheck(*args: str, timeout: float = 180) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "leasecheck", *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=timeout, env={**os.environ, "COLUMNS": "4096"})


def _run_dirs(results: Path) -> set[Path]:
    return {p.parent for p in results.glob("*/*/config.json")}


def _started(results: Path, before: set[Path], proc: subprocess.Popen, timeout_s: float = 90.0) -> Path | None:
    """The new run directory once its workers run (run_start written), or None if the run ended first."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline and proc.poll() is None:
        for part in results.glob("*/*/history.d/harness.jsonl"):
            if part.parent.parent not in before and b'"run_start"' in part.read_bytes():
                return part.parent.parent
        time.sleep(0.05)
    return None


def _children(pid: int, needle: str) -> list[psutil.Process]:
    try:
        kids = psutil.Process(pid).children(recursive=True)
    except psutil.NoSuchProcess:
        return []
    out = []
    for k in kids:
        try:
            cmd = " ".join(k.cmdline())
            # the run's fork server has the worker module in its command line, as its children do
            parent = k.parent()
            server = forked_role(cmd, " ".join(parent.cmdline()) if parent else "") == "server"
            if needle in cmd and not server:
                out.append(k)
        except psutil.Error:
            pass
    return out


def _kill(target: str, proc: subprocess.Popen, run_dir: Path, rng: random.Random) -> bool:
    """Kill ``target`` of the run; whether there was one to kill."""
    cfg = json.loads((run_dir / "config.json").read_text())
    if target in ("harness", "worker", "store", "proxy"):
        if target == "harness":
            victims = [psutil.Process(proc.pid)]
        else:
            victims = _children(proc.pid, {"worker": "leasecheck.harness.run.worker", "store": "redis-server",
                                           "proxy": "leasecheck.harness.proxy"}[target])
        if not victims:
            return False
        try:
            rng.choice(victims).send_signal(signal.SIGKILL)
        except psutil.NoSuchProcess:
            return False
        return True
    r = redis.Redis(port=cfg["store_port"], socket_timeout=2)
    try:
        killed = 0
        for c in r.client_list():
            monitor = "O" in c.get("flags", "")
            if (monitor if target == "audit" else c.get("cmd") == "time" and not monitor):
                killed += r.execute_command("CLIENT", "KILL", "ID", c["id"])
        return killed > 0
    except redis.RedisError:
        return False
    finally:
        r.close()


def _recorded_pids(run_dir: Path) -> set[int]:
    pids = set()
    files = list(run_dir.glob("history.d/*.jsonl")) + [run_dir / "history.jsonl"]
    for f in files:
        if not f.is_file():
            continue
        for line in f.read_text(errors="replace").splitlines():
            if '"pid"' in line:
                try:
                    pid = json.loads(line).get("pid")
                except ValueError:
                    continue
                if isinstance(pid, int):
                    pids.add(pid)
    return pids


def _ports(run_dir: Path) -> set[int]:
    try:
        cfg = json.loads((run_dir / "config.json").read_text())
    except (OSError, ValueError):
        return set()
    return {p for p in (cfg.get("store_port"), cfg.get("client_port")) if isinstance(p, int)}


def leftovers(run_dir: Path, started: float) -> Counter:
    """What the run left behind: processes, stopped processes, skewed clocks, ledgers, ports."""
    found = Counter()
    ports = _ports(run_dir)
    holders = {c.pid for c in psutil.net_connections("tcp")
               if c.status == psutil.CONN_LISTEN and c.laddr and c.laddr.port in ports and c.pid}
    found["ports"] = len(holders)
    ours = set()
    for pid in _recorded_pids(run_dir) | holders:
        try:
            p = psutil.Process(pid)
            if p.create_time() >= started - 1 and p.status() != psutil.STATUS_ZOMBIE:
                ours.add(p)
        except psutil.Error:
            pass
    for p in psutil.process_iter():
        try:
            if str(run_dir) in " ".join(p.cmdline()) and p.status() != psutil.STATUS_ZOMBIE:
                ours.add(p)
        except psutil.Error:
            pass
    found["processes"] = len(ours)
    found["stopped"] = sum(1 for p in ours if _status(p) == psutil.STATUS_STOPPED)
    for f in run_dir.glob("faketime/*"):
        try:
            if f.suffix != ".tmp" and float(f.read_text().strip() or 0) != 0.0:
                found["skewed clocks"] += 1
        except (OSError, ValueError):
            found["skewed clocks"] += 1
    found["ledgers"] = int((run_dir / "faults-active.json").exists())
    return found


def _status(p: psutil.Process) -> str:
    try:
        return p.status()
    except psutil.Error:
        return ""


def _settled(run_dir: Path, started: float) -> Counter:
    """Leftovers once they had time to go (an orphaned worker exits after its grace)."""
    deadline = time.monotonic() + SETTLE_S
    while True:
        found = leftovers(run_dir, started)
        if not +found or time.monotonic() > deadline:
            return found
        time.sleep(0.5)


def one_kill(n: int, target: str, rng: random.Random, results: Path, counts: Counter, log,
             limits: tuple[int, ...] = (3, 4, 5)) -> None:
    fault = rng.choice(FAULTS if target != "proxy" else ("latency", "partition"))
    limit = rng.choice(limits)
    args = ["run", "--lease", rng.choice(LEASES), "--workers", str(rng.choice((2, 3))),
            "--time-limit", f"{limit}s", "--nemesis", fault, "--nemesis-interval", "0.5s",
            "--seed", str(rng.randrange(1 << 30)), "--results-dir", str(results), "--quiet"]
    if target == "proxy":
        args.append("--proxy")
    t = time.monotonic()
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        for _attempt in range(BUSY_RETRIES):
            started, before = time.time(), _run_dirs(results)
            out.seek(0), out.truncate(), err.seek(0), err.truncate()
            proc = subprocess.Popen([sys.executable, "-m", "leasecheck", *args], cwd=ROOT, stdout=out, stderr=err,
                                    text=True, start_new_session=True, env={**os.environ, "COLUMNS": "4096"})
            run_dir = _started(results, before, proc)
            if run_dir is not None or proc.wait() != 64:
                break
            err.seek(0)
            if "is available" not in err.read():   # only a busy machine (memory, processes) is retried
                break
            counts["preflight refusals on a busy machine (retried)"] += 1
            time.sleep(3)
        killed = False
        if run_dir is not None:
            time.sleep(rng.uniform(0.0, limit * 0.9))
            killed = _kill(target, proc, run_dir, rng) if proc.poll() is None else False
        try:
            proc.wait(limit + 120)
        except subprocess.TimeoutExpired:
            counts["harness hung"] += 1
            proc.kill()
            proc.wait()
        out.seek(0)
        err.seek(0)
        text = out.read() + err.read()
    counts["kills"] += 1
    counts[f"kills: {target}"] += 1
    if not killed:
        counts["missed (nothing to kill then)"] += 1
    if "Traceback" in text:
        counts["tracebacks"] += 1
        log(f"  traceback in the run:\n{text[-2000:]}")
    if run_dir is None:
        counts["runs that did not start"] += 1
        log(f"  the run did not start: {text[-500:]}")
        return
    c = leasecheck("check", str(run_dir))
    said = c.stdout + c.stderr
    if "Traceback" in said:
        counts["tracebacks"] += 1
        log(f"  traceback in check:\n{said[-2000:]}")
    if c.returncode in (0, 1, 2):
        counts["checked: verdict"] += 1
        if c.returncode == 0 and killed and target in CUT and not _finished_first(run_dir):
            counts["VALID after a cut"] += 1
            log(f"  VALID after killing the {target}: {run_dir}")
    elif c.returncode == 64 and len(c.stderr.strip().splitlines()) == 1:
        counts["checked: refused in one line"] += 1
    else:
        counts["checked: neither"] += 1
        log(f"  check exited {c.returncode}: {said[-1000:]}")
    cleanup = leasecheck("cleanup", "--results-dir", str(results))
    if "Traceback" in cleanup.stdout + cleanup.stderr:
        counts["tracebacks"] += 1
    for what, k in _settled(run_dir, started).items():
        if k:
            counts[f"left: {what}"] += k
            log(f"  left {k} {what}: {run_dir}")
    verdict = {0: "VALID", 1: "INVALID", 2: "INCONCLUSIVE", 64: "refused"}.get(c.returncode, c.returncode)
    log(f"{n:3d} {target:8s} {fault:13s} {'killed' if killed else 'missed'}; run exit {proc.returncode}; "
        f"check: {verdict}; {time.monotonic() - t:.0f} s")


def _finished_first(run_dir: Path) -> bool:
    """The run reached its time limit before the kill (run_end reason time-limit): not cut."""
    try:
        res = json.loads((run_dir / "results.json").read_text())
    except (OSError, ValueError):
        return False
    return not res.get("interrupted")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--kills", type=int, default=30, help="how many kills in all (default 30)")
    ap.add_argument("--seed", type=int, default=None, help="the random seed (default: a fresh one)")
    ap.add_argument("--json", action="store_true", help="print the counts as one JSON line")
    ap.add_argument("--targets", default=",".join(TARGETS),
                    help=f"what to kill, in turn (default {','.join(TARGETS)})")
    ap.add_argument("--time-limits", default="3,4,5", help="the runs' time limits to draw from, in s (default 3,4,5)")
    opts = ap.parse_args()
    targets = [t for t in opts.targets.split(",") if t]
    unknown = [t for t in targets if t not in TARGETS]
    if unknown or not targets:
        ap.error(f"--targets {opts.targets}: pick from {', '.join(TARGETS)}")
    limits = tuple(int(x) for x in opts.time_limits.split(","))
    seed = opts.seed if opts.seed is not None else random.randrange(1 << 30)
    rng = random.Random(seed)
    counts: Counter = Counter()
    log = (lambda line: print(line, file=sys.stderr, flush=True)) if opts.json else \
        (lambda line: print(line, flush=True))
    log(f"chaos: {opts.kills} kills, seed {seed}")
    t = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="leasecheck-chaos-") as tmp:
        results = Path(tmp) / "results"
        for n in range(opts.kills):
            one_kill(n + 1, targets[n % len(targets)], rng, results, counts, log, limits)
    elapsed = time.monotonic() - t
    zero = ("tracebacks", "VALID after a cut", "checked: neither", "runs that did not start", "harness hung")
    summary = {"seed": seed, "elapsed_s": round(elapsed, 1), **{k: counts.get(k, 0) for k in zero},
               **{k: v for k, v in sorted(counts.items()) if k not in zero}}
    left = sum(v for k, v in counts.items() if k.startswith("left: "))
    summary["leftovers"] = left
    if opts.json:
        print(json.dumps(summary))
    else:
        for k, v in summary.items():
            print(f"{k:34s} {v}")
    bad = left + sum(counts.get(k, 0) for k in zero)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
