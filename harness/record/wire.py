"""The wire path: every slot's own listening port, forwarding to the store, numbering on the way.

A lease that brings its own client (``connect = "url"``, or one built from the host and port of
the client it was handed) talks to the store through its slot's port here. The worker owns the
port, so every connection accepted on it is that slot's, whatever library opened it. For each
one the forwarder opens a connection upstream — to the store, or to the Toxiproxy proxy when
network faults are planned (the chain: lease → this port → proxy → store, so latency,
partitions and restarts act as on any worker connection) — and cuts the client's byte stream
into commands (RESP arrays and inline commands, pipelines and ``MULTI``/``EXEC`` alike):

- The client's handshake (``HELLO``, ``AUTH``, ``CLIENT ...``, ``SELECT``, ``PING``) goes through
  as it comes, unnumbered, as redis-py's goes before the harness's marker.
- Before the first other command the forwarder sends ``ECHO leasecheck:conn:<conn>`` upstream
  (``<conn>`` from the slot's ``SendTracker``, in the namespace of the slot's redis-py
  connections: ``w3.s1.c4``) and drops its reply, so the audit learns the address of the
  connection exactly as from a redis-py connection of the harness.
- Each command after it is numbered as ``AuditedConnection`` numbers it (``HIDDEN`` ones with
  ``seq`` null) and added to the slot's tracker **before** its bytes are sent on, so it is in the
  ``sent`` list of the call during which it was sent (a command sent between two calls: in the
  next call's, see docs/history.md).
- Replies come back in order: a refusal before running (``unknown command``, ``OOM`` …) takes
  its command's number away and moves the later ones down, outside a transaction; a ``SET`` or
  ``SETNX`` gets its reply (1 wrote, 0 did not), as on the redis-py path.

The checker needs nothing else: the join (``checkers/model/join.py``) reads these connections
as it reads the harness's own. One asyncio loop in a daemon thread serves every slot of the
worker; a worker paused by a fault stops its forwarder with it.
"""
from __future__ import annotations

import asyncio
import socket
import threading
from collections import deque
from typing import Callable

from leasecheck.harness.record.connection import refused
from leasecheck.harness.record.numbering import HIDDEN, SendTracker, _CREATES, _has_get, _name
from leasecheck.harness.record.resp import error_text, is_push, reply_end, split_commands, wrote
from leasecheck.protocol import CONN_MARKER, HANDSHAKE

_READ = 1 << 16
_CONNECT_S = 10.0              # the longest the forwarder waits for its upstream connection
_SWALLOW = object()            # the pending reply of the marker: not the client's


def _marker(conn: str) -> bytes:
    text = (CONN_MARKER + conn).encode()
    return b"*2\r\n$4\r\nECHO\r\n$%d\r\n%s\r\n" % (len(text), text)


class Link:
    """One client connection's bookkeeping: its name once marked, its next number, and what
    each reply still to come answers (``[entry or None, in a transaction, a create's reply
    wanted]``, or the marker's)."""

    def __init__(self, tracker: SendTracker, on_marked: Callable[[str], None] | None = None) -> None:
        self.tracker, self.on_marked = tracker, on_marked
        self.conn: str | None = None
        self.seq = 0
        self.in_multi = False
        self.pending: deque = deque()

    def request(self, args: list[bytes], raw: bytes) -> bytes:
        """The bytes to send upstream for one client command (the marker first, once)."""
        name = _name(args)
        head = b""
        if self.conn is None and name not in HANDSHAKE:
            self.conn = self.tracker.new_conn_id()
            self.pending.append(_SWALLOW)
            head = _marker(self.conn)
            if self.on_marked is not None:
                self.on_marked(self.conn)
        if self.conn is None:
            self.pending.append([None, False, False])   # the handshake: no number, as redis-py's
            return raw
        if name in HIDDEN:
            entry = [self.conn, None, name]
        else:
            entry = [self.conn, self.seq, name]
            self.seq += 1
        txn = self.in_multi or name in ("EXEC", "DISCARD")
        if name == "MULTI":
            self.in_multi = True
        elif name in ("EXEC", "DISCARD"):
            self.in_multi = False
        self.tracker.add(entry)
        self.pending.append([entry, txn, name in _CREATES and not (name == "SET" and _has_get(args))])
        return head + raw

    def reply(self, raw: bytes) -> bool:
        """Take one whole reply; False when it is the marker's (not sent to the client)."""
        if is_push(raw) or not self.pending:
            return True
        item = self.pending.popleft()
        if item is _SWALLOW:
            return False
        entry, txn, create = item
        if entry is None or entry[1] is None:
            return True
        err = error_text(raw)
        if err is not None:
            if not txn and refused(err):
                for later in self.pending:
                    if later is not _SWALLOW and later[0] is not None and later[0][1] is not None:
                        later[0][1] -= 1
                entry[1] = None
                self.seq -= 1
            return True
        if create and len(entry) == 3:
            w = wrote(raw)
            if w is not None:
                entry.append(w)
        return True


class Wire:
    """The forwarders of one worker's slots: ``listen(tracker)`` binds a slot's port (before
    ``start``), ``start()`` serves them all from one loop thread, ``close()`` stops it."""

    def __init__(self, upstream_host: str, upstream_port: int,
                 on_conn: Callable[[str, str, str], None] | None = None) -> None:
        self.upstream = (upstream_host, upstream_port)
        self.on_conn = on_conn          # (slot process, conn, upstream address) once marked
        self._socks: list[tuple[socket.socket, SendTracker]] = []
        self._loop: asyncio.AbstractEventLoop | None = None
        self._servers: list[asyncio.AbstractServer] = []
        self._thread: threading.Thread | None = None

    def listen(self, tracker: SendTracker) -> int:
        """A listening port on 127.0.0.1 for the slot ``tracker`` records."""
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.bind(("127.0.0.1", 0))
        sock.listen(128)
        sock.setblocking(False)
        self._socks.append((sock, tracker))
        return sock.getsockname()[1]

    def start(self) -> None:
        loop = self._loop = asyncio.new_event_loop()
        ready = threading.Event()

        def run() -> None:
            asyncio.set_event_loop(loop)
            for sock, tracker in self._socks:
                self._servers.append(loop.run_until_complete(asyncio.start_server(self._handler(tracker), sock=sock)))
            ready.set()
            loop.run_forever()

        self._thread = threading.Thread(target=run, name="leasecheck-wire", daemon=True)
        self._thread.start()
        ready.wait(10)

    def close(self) -> None:
        """Stop listening, end every forwarded connection, stop the loop (at most a few seconds)."""
        loop, thread = self._loop, self._thread
        if loop is not None and thread is not None and thread.is_alive():
            async def shutdown() -> None:
                for server in self._servers:
                    server.close()
                tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
                for t in tasks:
                    t.cancel()
                await asyncio.gather(*tasks, return_exceptions=True)
            try:
                asyncio.run_coroutine_threadsafe(shutdown(), loop).result(5)
            except Exception:   # a loop that cannot finish in time is stopped all the same
                pass
            loop.call_soon_threadsafe(loop.stop)
            thread.join(5)
            if not thread.is_alive():
                loop.close()
        for sock, _ in self._socks:
            sock.close()

    def _handler(self, tracker: SendTracker):
        async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            try:
                up_reader, up_writer = await asyncio.wait_for(asyncio.open_connection(*self.upstream), _CONNECT_S)
            except (OSError, asyncio.TimeoutError):
                writer.close()      # the store (or the proxy) refused or did not answer: as it would
                return
            sockname = up_writer.get_extra_info("sockname")
            addr = f"{sockname[0]}:{sockname[1]}" if sockname else "?"
            on_conn = self.on_conn
            link = Link(tracker, (lambda conn: on_conn(tracker.process, conn, addr)) if on_conn else None)
            tasks = [asyncio.ensure_future(_requests(link, reader, up_writer)),
                     asyncio.ensure_future(_replies(link, up_reader, writer))]
            try:
                await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
            finally:
                for t in tasks:
                    t.cancel()
                for w in (up_writer, writer):
                    w.close()
        return serve


def _until_closed(pump):
    """A direction of a link ends quietly when either side closes or resets its connection."""
    async def run(*args) -> None:
        try:
            await pump(*args)
        except (ConnectionError, OSError):
            pass
    return run


@_until_closed
async def _requests(link: Link, reader: asyncio.StreamReader, up: asyncio.StreamWriter) -> None:
    buf = bytearray()
    while True:
        data = await reader.read(_READ)
        if not data:
            return
        buf += data
        try:
            commands, used = split_commands(buf)
        except ValueError:
            return                         # not RESP: the store would close it too
        del buf[:used]
        if commands:
            up.write(b"".join([link.request(args, raw) for args, raw in commands]))
            await up.drain()


@_until_closed
async def _replies(link: Link, up: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    buf = bytearray()
    while True:
        data = await up.read(_READ)
        if not data:
            return
        buf += data
        out, pos = [], 0
        while True:
            try:
                end = reply_end(buf, pos)
            except ValueError:
                return
            if end is None:
                break
            raw = bytes(buf[pos:end])
            pos = end
            if link.reply(raw):
                out.append(raw)
        del buf[:pos]
        if out:
            writer.write(b"".join(out))
            await writer.drain()
