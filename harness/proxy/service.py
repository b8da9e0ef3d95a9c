"""The running proxy: the HTTP API and every proxy listener in one asyncio event loop."""
from __future__ import annotations

import asyncio
import json
import logging
import socket
from pathlib import Path

from aiohttp import web

from leasecheck.harness.proxy.addresses import loopback_listen
from leasecheck.harness.proxy.api import Api
from leasecheck.harness.proxy.errors import ApiError
from leasecheck.harness.proxy.server import ProxyCollection

log = logging.getLogger("leasecheck.harness.proxy")


class ProxyService:
    def __init__(self, host: str = "127.0.0.1", port: int = 8474):
        self.host, self.port = loopback_listen(f"{host}:{port}")   # NotLoopbackError otherwise
        self.proxies = ProxyCollection()
        self._runner: web.AppRunner | None = None

    async def start(self, config: Path | None = None) -> int:
        """Listen for the API; returns its port. ``config``: a JSON array as for /populate."""
        if config is not None:
            body = json.loads(Path(config).read_text())
            done, err = await self.proxies.populate(body)
            if err is not None:
                raise ApiError(f"config {config}: {err.message}", err.status)
            log.info("populated %d proxies from %s", len(done), config)
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((self.host, self.port))
        except OSError:
            sock.close()
            raise
        self.port = sock.getsockname()[1]
        self._runner = web.AppRunner(Api(self.proxies).app(), access_log=None,
                                     handle_signals=False)
        await self._runner.setup()
        await web.SockSite(self._runner, sock).start()
        log.info("API listening on http://%s:%d", self.host, self.port)
        return self.port

    async def stop(self) -> None:
        self.proxies.stop_all()
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None


async def serve_until(stop: asyncio.Event, service: ProxyService, config: Path | None,
                      on_ready) -> None:
    port = await service.start(config)
    on_ready(port)
    try:
        await stop.wait()
    finally:
        await service.stop()
