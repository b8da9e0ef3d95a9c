"""One proxied TCP connection: the client's socket, a socket to the upstream, two links.

Closing follows Toxiproxy: when a link's stream ends (its source closed, or a toxic ended
it) the link closes its destination socket completely; the other link then sees its source
gone and ends in turn, through its own toxics (so ``slow_close`` on either side delays the
close that reaches that side). A toxic that ends the stream by RST (``reset_peer``) aborts
both sockets with ``SO_LINGER`` 0, so each peer gets a TCP RST.
"""
from __future__ import annotations

import asyncio
import logging
import socket
import struct
from typing import Protocol

from leasecheck.harness.proxy.link import Link
from leasecheck.harness.proxy.toxics import DOWNSTREAM, UPSTREAM, Toxic

log = logging.getLogger("leasecheck.harness.proxy")

_LINGER_RST = struct.pack("ii", 1, 0)


class Chains(Protocol):
    def toxics(self, stream: str) -> list[Toxic]: ...


class Proxy(Protocol):
    """What a connection reads of its proxy (``leasecheck.harness.proxy.server.Proxy``)."""
    name: str
    upstream: str
    upstream_addr: tuple[str, int]
    enabled: bool
    generation: int
    connections: set
    toxics: Chains


class Side(asyncio.Protocol):
    """The protocol of one of the two sockets; the source of one link, the destination of the other."""

    def __init__(self, conn: Connection, role: str):
        self.conn = conn
        self.role = role
        self.transport: asyncio.Transport | None = None
        self.in_link: Link | None = None    # the link this socket feeds
        self.out_link: Link | None = None   # the link that writes into this socket
        self.lost = False
        self.early: list[bytes] = []
        self.on_data = self.early.append    # replaced by the link once it exists

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]
        self.conn.side_made(self)

    def data_received(self, data: bytes) -> None:
        self.on_data(data)

    def eof_received(self) -> bool:
        self.conn.side_eof(self)
        return True   # keep our write side open; the other link decides when to close it

    def connection_lost(self, exc: Exception | None) -> None:
        self.lost = True
        self.conn.side_lost(self)

    def pause_writing(self) -> None:
        if self.out_link is not None:
            self.out_link.set_dest_paused(True)

    def resume_writing(self) -> None:
        if self.out_link is not None:
            self.out_link.set_dest_paused(False)


class Connection:
    def __init__(self, proxy: Proxy):
        self.proxy = proxy
        self.loop = asyncio.get_running_loop()
        self.generation = proxy.generation
        self.client = Side(self, "client")
        self.upstream = Side(self, "upstream")
        self.links: dict[str, Link] = {}
        self.dial_task: asyncio.Task | None = None
        self.client_eof = False
        self.ended = False

    # -- set-up --------------------------------------------------------------------------
    def side_made(self, side: Side) -> None:
        if side is not self.client:
            return
        proxy = self.proxy
        if not proxy.enabled or proxy.generation != self.generation:
            side.transport.abort()   # accepted just as the proxy was stopped
            return
        side.transport.pause_reading()
        proxy.connections.add(self)
        self.dial_task = self.loop.create_task(self._dial())

    async def _dial(self) -> None:
        host, port = self.proxy.upstream_addr
        try:
            await self.loop.create_connection(lambda: self.upstream, host, port)
        except asyncio.CancelledError:   # the client went away (or the proxy stopped) meanwhile
            if self.upstream.transport is not None:
                self.upstream.transport.abort()
            raise
        except OSError as exc:
            log.warning("proxy %s: cannot reach upstream %s: %s", self.proxy.name,
                        self.proxy.upstream, exc)
            self.client.transport.close()
            return
        finally:
            self.dial_task = None
        if self.ended or self.client.lost:
            self.upstream.transport.close()
            return
        chain = self.proxy.toxics
        up = Link(self.loop, UPSTREAM, self.client, self.upstream, chain.toxics(UPSTREAM), self.finish)
        down = Link(self.loop, DOWNSTREAM, self.upstream, self.client, chain.toxics(DOWNSTREAM), self.finish)
        self.links = {UPSTREAM: up, DOWNSTREAM: down}
        up.start()
        down.start()
        early, self.client.early = self.client.early, []
        for data in early:
            self.client.on_data(data)
        if self.client_eof:
            up.feed_eof()
        self.client.transport.resume_reading()

    # -- events from the sockets ---------------------------------------------------------
    def side_eof(self, side: Side) -> None:
        if side.in_link is not None:
            side.in_link.feed_eof()
        elif side is self.client:
            self.client_eof = True

    def side_lost(self, side: Side) -> None:
        if side.in_link is not None:
            side.in_link.feed_eof()
        if side.out_link is not None:
            side.out_link.dest_lost()
        if side is self.client and self.dial_task is not None:
            self.dial_task.cancel()
        if self.client.lost and (self.upstream.lost or self.upstream.transport is None):
            self._ended()

    # -- endings -------------------------------------------------------------------------
    def finish(self, link: Link, abort: bool) -> None:
        """``link``'s stream ended: close its destination (or reset the whole connection)."""
        if abort:
            self.reset()
            return
        transport = link.dst.transport
        if transport is not None and not transport.is_closing():
            transport.close()

    def reset(self) -> None:
        """Both peers get a TCP RST."""
        for side in (self.client, self.upstream):
            transport = side.transport
            if transport is None or transport.is_closing():
                continue
            sock = transport.get_extra_info("socket")
            if sock is not None:
                try:
                    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, _LINGER_RST)
                except OSError:
                    pass
            self._abort_side(side)

    def abort(self) -> None:
        """Drop the connection now (the proxy is being disabled or deleted)."""
        if self.dial_task is not None:
            self.dial_task.cancel()
        for side in (self.client, self.upstream):
            if side.transport is not None and not side.transport.is_closing():
                self._abort_side(side)
        self._ended()

    def _abort_side(self, side: Side) -> None:
        if side.out_link is not None:
            side.out_link.dest_lost()
        side.transport.abort()

    def _ended(self) -> None:
        if self.ended:
            return
        self.ended = True
        for link in self.links.values():
            link.cancel()
        self.proxy.connections.discard(self)
