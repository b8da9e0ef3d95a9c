"""A long, wide run on a small machine: `leasecheck run` with many workers and a random nemesis
for minutes, then `leasecheck check` of the same run directory on its own. Prints one JSON line:
the run's and the check's wall time, the history's and the audit's size, the verdict, and the
peak resident memory of every kind of process involved (sampled from /proc every 0.5 s: the
harness, each worker, each redis-server, the proxy, the checker).

    python bench/scale.py --workers 64 --time-limit 10m
    python bench/scale.py --workers 8 --time-limit 20s --nemesis pause,latency   # a quick try

Not a test; it prints numbers.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.cpu_window import parent_cmdline, tree  # noqa: E402
from leasecheck.harness.run.fork_server import forked_role  # noqa: E402

PAGE = os.sysconf("SC_PAGE_SIZE")


def _kind(pid: int) -> str | None:
    try:
        cmd = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return None
    text = b" ".join(cmd).decode(errors="replace")
    if "redis-server" in text:
        return "redis-server"
    role = forked_role(text, parent_cmdline(pid))        # the server, or a worker it forked
    if role is not None:
        return "worker" if role == "worker" else "fork-server"
    if "leasecheck.harness.run.worker" in text:
        return "worker"
    if "leasecheck.harness.proxy" in text or "proxy" in text.split(" -m ")[-1][:20]:
        return "proxy"
    if " check " in f" {text} ":
        return "checker"
    if "harness" in text:
        return "harness"
    return text.split(" ")[0].rsplit("/", 1)[-1] or None


def _rss(pid: int) -> int:
    try:
        return int(Path(f"/proc/{pid}/statm").read_text().split()[1]) * PAGE
    except (OSError, IndexError, ValueError):
        return 0


class Sampler:
    """Peak RSS per process kind under one root process (and the largest single process)."""

    def __init__(self, root: int):
        self.root, self.peak, self.sum_peak = root, {}, {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)
        self._thread.start()

    def _loop(self) -> None:
        while not self._stop.wait(0.5):
            totals: dict[str, int] = {}
            for pid in tree([self.root]):
                kind = _kind(pid)
                if kind is None:
                    continue
                rss = _rss(pid)
                self.peak[kind] = max(self.peak.get(kind, 0), rss)
                totals[kind] = totals.get(kind, 0) + rss
            for kind, total in totals.items():
                self.sum_peak[kind] = max(self.sum_peak.get(kind, 0), total)

    def stop(self) -> dict:
        self._stop.set()
        self._thread.join()
        mb = lambda b: round(b / 2**20, 1)  # noqa: E731
        return {kind: {"largest_mb": mb(self.peak[kind]), "all_together_mb": mb(self.sum_peak[kind])}
                for kind in sorted(self.peak)}


def _run(cmd: list[str]) -> tuple[int, float, dict]:
    start = time.monotonic()
    p = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    sampler = Sampler(p.pid)
    _, err = p.communicate()
    return p.returncode, round(time.monotonic() - start, 1), sampler.stop() | ({"stderr": err.decode()[-300:]} if p.returncode > 2 else {})


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workers", type=int, default=64)
    ap.add_argument("--time-limit", default="10m")
    ap.add_argument("--lease", default="token-cas")
    ap.add_argument("--nemesis", default="pause,clock,latency,partition,kill,evict")
    ap.add_argument("--nemesis-interval", default="10s")
    ap.add_argument("--seed", default="1")
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        run = [sys.executable, "-m", "leasecheck", "run", "--lease", a.lease, "--workers", str(a.workers),
               "--time-limit", a.time_limit, "--nemesis", a.nemesis, "--nemesis-interval", a.nemesis_interval,
               "--seed", a.seed, "--results-dir", d, "--quiet"]
        run_code, run_s, run_mem = _run(run)
        run_dir = (Path(d) / "latest").resolve()
        if not (run_dir / "history.jsonl").exists():   # refused before it ran (exit 64), or it crashed
            said = (run_mem.get("stderr") or "").strip().splitlines()
            sys.exit(f"bench/scale.py: leasecheck run exited {run_code} without a run to check: "
                     f"{said[-1] if said else 'no message'}")
        check_code, check_s, check_mem = _run([sys.executable, "-m", "leasecheck", "check", str(run_dir)])
        results = json.loads((run_dir / "results.json").read_text())
        size = lambda name: (run_dir / name).stat().st_size if (run_dir / name).exists() else None  # noqa: E731
        print(json.dumps({
            "command": " ".join(run[2:]), "workers": a.workers, "time_limit": a.time_limit,
            "run_exit": run_code, "run_wall_s": run_s, "check_exit": check_code, "check_wall_s": check_s,
            "valid": results["valid"], "reasons": results["reasons"][:2], "ops": results["ops"],
            "faults": len(results.get("faults") or []), "history_mb": round(size("history.jsonl") / 2**20, 1),
            "history_events": sum(1 for _ in (run_dir / "history.jsonl").open("rb")),
            "audit_mb": round((size("audit.log") or 0) / 2**20, 1),
            "peak_rss_run": run_mem, "peak_rss_check": check_mem,
            "machine": f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}",
            "load_avg_1m": round(os.getloadavg()[0], 2)}), flush=True)


if __name__ == "__main__":
    main()
