"""The store's own execution log, recorded on the harness's direct connection.

``MonitorRecorder`` opens a raw socket to the store, sends ``MONITOR`` and copies the stream
to ``audit.log`` as it arrives (bytes in, bytes out: no parsing on the hot path, so it keeps up
with the store). ``finish()`` sends ``ECHO leasecheck:audit-end`` on another connection and
waits until that marker comes through, so every command the store ran before it is on disk;
then it appends ``# end``. An audit without ``# end`` was cut short.

``ClockSampler`` writes ``store-clock.jsonl``: the store's ``TIME`` against the history clock,
which is how store-side times are placed on the run's timeline.
"""
from __future__ import annotations

import json
import os
import socket
import threading
import time
from pathlib import Path

import redis

END_MARKER = "leasecheck:audit-end"
_FLUSH_S = 0.05


class MonitorRecorder:
    def __init__(self, host: str, port: int, path: Path):
        self.host, self.port, self.path = host, port, Path(path)
        self._sock: socket.socket | None = None
        self._thread: threading.Thread | None = None
        self._seen_end = threading.Event()
        self._stopping = threading.Event()
        self.error: str | None = None

    def start(self, timeout_s: float = 5.0) -> None:
        self._sock = socket.create_connection((self.host, self.port), timeout=timeout_s)
        self._sock.sendall(b"MONITOR\r\n")
        first = b""
        while not first.endswith(b"\r\n"):
            chunk = self._sock.recv(64)
            if not chunk:
                raise ConnectionError("the store closed the MONITOR connection")
            first += chunk
        if not first.startswith(b"+OK"):
            raise ConnectionError(f"MONITOR refused: {first.strip().decode(errors='replace')}")
        self._fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        os.write(self._fd, b"OK\n")
        self._sock.settimeout(_FLUSH_S)
        self._thread = threading.Thread(target=self._copy, name="audit", daemon=True)
        self._thread.start()

    def _copy(self) -> None:
        marker = f'"ECHO" "{END_MARKER}"'.encode()
        pending = b""
        try:
            while not self._stopping.is_set():
                try:
                    chunk = self._sock.recv(1 << 20)
                except socket.timeout:
                    continue
                if not chunk:
                    os.write(self._fd, b"# gap store closed the connection\n")
                    return
                pending += chunk
                cut = pending.rfind(b"\r\n")
                if cut < 0:
                    continue
                block, pending = pending[:cut + 2], pending[cut + 2:]
                # Each line is a RESP simple string: "+<text>\r\n" -> "<text>\n".
                out = block.replace(b"\r\n+", b"\n").replace(b"\r\n", b"\n")
                if out.startswith(b"+"):
                    out = out[1:]
                os.write(self._fd, out)
                if marker in out:
                    self._seen_end.set()
                    return
        except OSError as e:
            self.error = str(e)
            try:
                os.write(self._fd, f"# gap {e}\n".encode())
            except OSError:
                pass

    def finish(self, admin: redis.Redis, timeout_s: float = 30.0) -> bool:
        """Drain the audit up to now; True when it is complete (``# end`` written)."""
        complete = False
        if self._thread and self._thread.is_alive():
            try:
                admin.echo(END_MARKER)
                complete = self._seen_end.wait(timeout_s)
            except redis.RedisError:
                complete = False
        self._stopping.set()
        if self._thread:
            self._thread.join(2)
        if complete:
            os.write(self._fd, b"# end\n")
        self.close()
        return complete

    def close(self) -> None:
        self._stopping.set()
        if self._sock:
            try:
                self._sock.close()
            except OSError:
                pass
            self._sock = None
        if getattr(self, "_fd", None) is not None:
            if self._thread:
                self._thread.join(2)
            os.close(self._fd)
            self._fd = None


class ClockSampler:
    """Every ``interval_s``: history time (midpoint), round trip, and the store's ``TIME``."""

    def __init__(self, admin: redis.Redis, path: Path, t0_ns: int, interval_s: float = 0.5):
        self.admin, self.path, self.t0_ns, self.interval_s = admin, Path(path), t0_ns, interval_s
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="store-clock", daemon=True)

    def start(self) -> None:
        self.sample()
        self._thread.start()

    def sample(self) -> None:
        try:
            a = time.monotonic_ns()
            secs, micros = self.admin.time()
            b = time.monotonic_ns()
        except redis.RedisError:
            return
        line = {"time": (a + b) // 2 - self.t0_ns, "rtt_ns": b - a,
                "store_us": int(secs) * 1_000_000 + int(micros)}
        with open(self.path, "a") as f:
            f.write(json.dumps(line) + "\n")

    def _loop(self) -> None:
        while not self._stop.wait(self.interval_s):
            self.sample()

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(5)
        self.sample()
