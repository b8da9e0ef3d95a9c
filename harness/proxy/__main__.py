"""Run the proxy in the foreground::

    python -m leasecheck.harness.proxy [--host 127.0.0.1] [--port 8474] [--config proxies.json]
                            [--seed N] [--watch-stdin] [-v]

Prints ``ready <api_port>`` on stdout once the API listens (``--port 0`` picks a free port);
logs go to stderr. Stops on SIGTERM or SIGINT (and, with ``--watch-stdin``, when its standard
input closes, so it cannot outlive a parent that holds the other end of a pipe).
"""
from __future__ import annotations

import argparse
import asyncio
import logging
import os
import random
import signal
import sys
from pathlib import Path

from leasecheck.harness.proxy.addresses import NotLoopbackError
from leasecheck.harness.proxy.errors import ApiError
from leasecheck.harness.proxy.service import ProxyService, serve_until


def _parse(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m leasecheck.harness.proxy",
                                description="TCP fault-injection proxy with Toxiproxy's HTTP API "
                                            "(listens on 127.0.0.1 only).")
    p.add_argument("--host", default="127.0.0.1", help="API host: 127.0.0.1 or localhost")
    p.add_argument("--port", type=int, default=8474, help="API port; 0 picks a free one")
    p.add_argument("--config", type=Path, help="JSON array of proxies to create at start "
                                               "(the body of POST /populate)")
    p.add_argument("--seed", type=int, help="seed the toxicity and jitter draws")
    p.add_argument("--watch-stdin", action="store_true",
                   help="exit when standard input reaches end of file")
    p.add_argument("-v", "--verbose", action="store_true", help="log each connection")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = _parse(argv)
    logging.basicConfig(stream=sys.stderr, level=logging.DEBUG if args.verbose else logging.INFO,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    if args.seed is not None:
        random.seed(args.seed)
    try:
        service = ProxyService(args.host, args.port)
    except (NotLoopbackError, ValueError) as exc:
        print(f"leasecheck.harness.proxy: {exc}", file=sys.stderr)
        return 2
    try:
        asyncio.run(_run(service, args))
    except OSError as exc:
        print(f"leasecheck.harness.proxy: cannot listen on {args.host}:{args.port}: {exc}", file=sys.stderr)
        return 1
    except (ApiError, ValueError) as exc:   # a bad --config
        print(f"leasecheck.harness.proxy: {exc}", file=sys.stderr)
        return 2
    return 0


async def _run(service: ProxyService, args: argparse.Namespace) -> None:
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    if args.watch_stdin:
        fd = sys.stdin.fileno()

        def on_stdin() -> None:
            try:
                data = os.read(fd, 4096)
            except OSError:
                data = b""
            if not data:
                loop.remove_reader(fd)
                stop.set()

        loop.add_reader(fd, on_stdin)

    def ready(port: int) -> None:
        print(f"ready {port}", flush=True)

    await serve_until(stop, service, args.config, ready)


if __name__ == "__main__":
    sys.exit(main())
