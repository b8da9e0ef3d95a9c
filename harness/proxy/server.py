"""Proxies: a listener on 127.0.0.1 that opens a :class:`Connection` per client, and the
collection of named proxies the API manages (create, update, populate, reset, delete)."""
from __future__ import annotations

import asyncio
import logging
from typing import Any

from leasecheck.harness.proxy.addresses import parse_listen_or_400, parse_upstream_or_400
from leasecheck.harness.proxy.chain import ToxicChain
from leasecheck.harness.proxy.connection import Connection
from leasecheck.harness.proxy.errors import (
    PROXY_EXISTS,
    PROXY_NOT_FOUND,
    ApiError,
    bad_request,
    missing_field,
)

log = logging.getLogger("leasecheck.harness.proxy")


def _string_field(body: dict, key: str, default: str | None = None) -> str | None:
    value = body.get(key, default)
    if value is None:
        return default
    if not isinstance(value, str):
        raise bad_request(f"bad request body: {key} must be a string, got {value!r}")
    return value


def _bool_field(body: dict, key: str, default: bool) -> bool:
    value = body.get(key)
    if value is None:
        return default
    if not isinstance(value, bool):
        raise bad_request(f"bad request body: {key} must be true or false, got {value!r}")
    return value


class Proxy:
    def __init__(self, name: str, listen: str | None, upstream: str):
        parse_listen_or_400(listen)          # 400 unless 127.0.0.1 / localhost
        self.upstream_addr = parse_upstream_or_400(upstream)
        self.name = name
        self.listen = listen or "127.0.0.1:0"
        self.upstream = upstream
        self.enabled = False
        self.generation = 0          # bumped at each stop, so late accepts are dropped
        self.connections: set[Connection] = set()
        self.toxics = ToxicChain(self._open_links)
        self._server: asyncio.base_events.Server | None = None

    def _open_links(self, stream: str) -> list:
        return [conn.links[stream] for conn in list(self.connections) if stream in conn.links]

    def to_json(self) -> dict:
        return {"name": self.name, "listen": self.listen, "upstream": self.upstream,
                "enabled": self.enabled, "toxics": [t.to_json() for t in self.toxics.all()]}

    async def start(self) -> None:
        if self.enabled:
            return
        host, port = parse_listen_or_400(self.listen)
        loop = asyncio.get_running_loop()
        try:
            self._server = await loop.create_server(lambda: Connection(self).client, host, port,
                                                    reuse_address=True, backlog=128)
        except OSError as exc:
            raise ApiError(f"listen tcp {host}:{port}: {exc.strerror or exc}", 500) from None
        bound = self._server.sockets[0].getsockname()
        self.listen = f"{bound[0]}:{bound[1]}"
        self.enabled = True
        log.info("proxy %s listening on %s -> %s", self.name, self.listen, self.upstream)

    def stop(self) -> None:
        """Stop listening and drop every open connection."""
        if not self.enabled:
            return
        self.enabled = False
        self.generation += 1
        if self._server is not None:
            self._server.close()
            self._server = None
        for conn in list(self.connections):
            conn.abort()
        log.info("proxy %s stopped", self.name)

    def differs(self, listen: str | None, upstream: str) -> bool:
        host, port = parse_listen_or_400(listen)
        return f"{host}:{port}" != self.listen or upstream != self.upstream

    async def update(self, body: Any) -> None:
        """POST/PATCH /proxies/{name}: ``listen``, ``upstream`` and ``enabled``, each optional.

        A new listen or upstream address restarts the proxy (dropping its connections)."""
        if not isinstance(body, dict):
            raise bad_request("bad request body: expected a JSON object")
        listen = _string_field(body, "listen", self.listen)
        upstream = _string_field(body, "upstream", self.upstream)
        enabled = _bool_field(body, "enabled", self.enabled)
        parse_listen_or_400(listen)
        upstream_addr = parse_upstream_or_400(upstream)
        if self.differs(listen, upstream):
            self.stop()
            self.listen = listen or "127.0.0.1:0"
            self.upstream = upstream
            self.upstream_addr = upstream_addr
        if enabled and not self.enabled:
            await self.start()
        elif not enabled:
            self.stop()


class ProxyCollection:
    def __init__(self) -> None:
        self.proxies: dict[str, Proxy] = {}

    def get(self, name: str) -> Proxy:
        proxy = self.proxies.get(name)
        if proxy is None:
            raise ApiError(PROXY_NOT_FOUND, 404)
        return proxy

    @staticmethod
    def _parse(body: Any, where: str = "") -> tuple[str, str | None, str, bool]:
        if not isinstance(body, dict):
            raise bad_request("bad request body: expected a JSON object")
        name = _string_field(body, "name")
        upstream = _string_field(body, "upstream")
        listen = _string_field(body, "listen")
        enabled = _bool_field(body, "enabled", True)
        if not name:
            raise missing_field("name" + where)
        if not upstream:
            raise missing_field("upstream" + where)
        return name, listen, upstream, enabled

    async def create(self, body: Any) -> Proxy:
        name, listen, upstream, enabled = self._parse(body)
        if name in self.proxies:
            raise ApiError(PROXY_EXISTS, 409)
        proxy = Proxy(name, listen, upstream)
        if enabled:
            await proxy.start()
        self.proxies[name] = proxy
        return proxy

    async def populate(self, body: Any) -> tuple[list[Proxy], ApiError | None]:
        """Create or replace (when listen or upstream differ) each proxy of a JSON array.

        Returns the proxies handled so far and the error that stopped it, if any."""
        if not isinstance(body, list):
            raise bad_request("bad request body: expected a JSON array of proxies")
        parsed = [self._parse(item, f" at proxy {i + 1}") for i, item in enumerate(body)]
        for _name, listen, upstream, _ in parsed:   # check every address before changing anything
            parse_listen_or_400(listen)
            parse_upstream_or_400(upstream)
        done: list[Proxy] = []
        for name, listen, upstream, enabled in parsed:
            existing = self.proxies.get(name)
            if existing is not None:
                if not existing.differs(listen, upstream):
                    done.append(existing)
                    continue
                existing.stop()
            proxy = Proxy(name, listen, upstream)
            try:
                if enabled:
                    await proxy.start()
            except ApiError as exc:
                return done, exc
            self.proxies[name] = proxy
            done.append(proxy)
        return done, None

    def delete(self, name: str) -> None:
        self.get(name).stop()
        del self.proxies[name]

    async def reset(self) -> None:
        """Enable every proxy and remove every toxic."""
        for proxy in list(self.proxies.values()):
            await proxy.start()
            proxy.toxics.reset()

    def stop_all(self) -> None:
        for proxy in self.proxies.values():
            proxy.stop()
