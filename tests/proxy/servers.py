"""Tiny upstream servers for the proxy tests (threads, 127.0.0.1 only) and socket helpers."""
from __future__ import annotations

import socket
import socketserver
import threading
import time


class _Server(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True
    block_on_close = False


class _Echo(socketserver.BaseRequestHandler):
    greeting = b""

    def handle(self) -> None:
        sock = self.request
        received = 0
        try:
            if self.greeting:
                sock.sendall(self.greeting)
            while True:
                data = sock.recv(65536)
                if not data:
                    break
                received += len(data)
                sock.sendall(data)
        except OSError:
            pass
        finally:
            self.server.received.append(received)   # bytes each finished connection got


class _Greeter(_Echo):
    greeting = b"hello\n"


class Upstream:
    """An echo server (optionally greeting each client first) on 127.0.0.1:<free port>."""

    def __init__(self, greet: bool = False):
        self.server = _Server(("127.0.0.1", 0), _Greeter if greet else _Echo)
        self.server.received = []
        self.thread = threading.Thread(target=self.server.serve_forever, args=(0.05,),
                                       daemon=True)

    @property
    def received(self) -> list[int]:
        return self.server.received

    @property
    def address(self) -> str:
        return "127.0.0.1:%d" % self.server.server_address[1]

    def start(self) -> "Upstream":
        self.thread.start()
        return self

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def addr(listen: str) -> tuple[str, int]:
    host, port = listen.rsplit(":", 1)
    return host, int(port)


def connect(proxy, timeout: float = 3.0) -> socket.socket:
    """A client socket to a toxiproxy ``Proxy`` (or a ``host:port`` string)."""
    listen = proxy if isinstance(proxy, str) else proxy.listen
    sock = socket.create_connection(addr(listen), timeout=timeout)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return sock


def recv_exactly(sock: socket.socket, n: int) -> bytes:
    buf = b""
    while len(buf) < n:
        data = sock.recv(n - len(buf))
        if not data:
            raise EOFError(f"closed after {len(buf)} of {n} bytes")
        buf += data
    return buf


def recv_until_eof(sock: socket.socket) -> bytes:
    buf = b""
    while True:
        data = sock.recv(65536)
        if not data:
            return buf
        buf += data


def rtt_ms(sock: socket.socket, payload: bytes = b"ping") -> float:
    t0 = time.perf_counter()
    sock.sendall(payload)
    assert recv_exactly(sock, len(payload)) == payload
    return (time.perf_counter() - t0) * 1000.0
