"""The store's own execution log, recorded on the harness's direct connection.

``MonitorRecorder`` opens a raw socket to the store, sends ``MONITOR`` and copies the stream
to ``audit.log`` as it arrives (bytes in, bytes out: no parsing on the hot path, so it keeps up
with the store), in pieces of a couple of milliseconds' worth (``GATHER_S``). ``finish()`` sends ``ECHO leasecheck:audit-end`` on another connection and
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

from leasecheck.protocol import AUDIT_DRAIN_MARKER, AUDIT_END, AUDIT_END_MARKER as END_MARKER, AUDIT_GAP, AUDIT_RESTART
from leasecheck.harness.record import writes

_FLUSH_S = 0.05
# After a read of less than SMALL_READ bytes the copy waits GATHER_S before reading again, so the
# store's lines gather in the socket meanwhile: a busy run's audit is copied a few hundred reads a
# second instead of a read (and a wake of the harness) per few commands. On two cores that halved
# the harness process's CPU per operation and raised the run's operations per second
# (bench/RESULTS.md, "Item 2, 2026-12-06 (fifth session)"). A read that finds SMALL_READ or more is
# catching up, and the next follows at once. 2 ms is far below what any reader of the audit waits
# for (a drain's marker, ``finish``).
GATHER_S = 0.002
SMALL_READ = 1 << 16


class MonitorRecorder:
    def __init__(self, host: str, port: int, path: Path):
        self.host, self.port, self.path = host, port, Path(path)
        self._sock: socket.socket | None = None
        self._thread: threading.Thread | None = None
        self._stopping = threading.Event()
        self._watch: tuple[bytes, threading.Event] | None = None
        self._restart: str | None = None          # reason, while a restart is expected
        self._at_restart = threading.Event()      # the old connection's end is on disk
        self._resumed = threading.Event()         # a new MONITOR connection is in place
        self._fd: int | None = None
        self._drains = 0
        self.error: str | None = None
        self.failed: OSError | None = None   # a write the file system refused (writes.unwritable)

    def start(self, timeout_s: float = 5.0) -> None:
        self._fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        os.write(self._fd, b"OK\n")
        self._sock = self._connect(timeout_s)
        self._thread = threading.Thread(target=self._copy, name="audit", daemon=True)
        self._thread.start()

    def _connect(self, timeout_s: float) -> socket.socket:
        sock = socket.create_connection((self.host, self.port), timeout=timeout_s)
        sock.sendall(b"MONITOR\r\n")
        first = b""
        while not first.endswith(b"\r\n"):
            chunk = sock.recv(64)
            if not chunk:
                raise ConnectionError("the store closed the MONITOR connection")
            first += chunk
        if not first.startswith(b"+OK"):
            raise ConnectionError(f"MONITOR refused: {first.strip().decode(errors='replace')}")
        sock.settimeout(_FLUSH_S)
        return sock

    def _copy(self) -> None:
        while not self._stopping.is_set():
            ended = self._copy_one(self._sock)
            if not ended:
                return
            if self._restart is None:
                self._write(f"{AUDIT_GAP} {ended}\n".encode())
                return
            self._write(f"{AUDIT_RESTART} {self._restart}\n".encode())
            self._restart = None
            self._at_restart.set()
            while not self._resumed.wait(_FLUSH_S):
                if self._stopping.is_set():
                    return
            self._resumed.clear()

    def _copy_one(self, sock: socket.socket) -> str | None:
        """Copy one MONITOR connection to the file; returns why it ended (None: we stopped)."""
        pending = b""
        while not self._stopping.is_set():
            try:
                chunk = sock.recv(1 << 20)
            except socket.timeout:
                continue
            except OSError as e:
                return f"MONITOR connection failed: {e}"
            if not chunk:
                return "the store closed the MONITOR connection"
            pending += chunk
            cut = pending.rfind(b"\r\n")
            if cut < 0:
                continue
            block, pending = pending[:cut + 2], pending[cut + 2:]
            # Each line is a RESP simple string: "+<text>\r\n" -> "<text>\n".
            out = block.replace(b"\r\n+", b"\n").replace(b"\r\n", b"\n")
            if out.startswith(b"+"):
                out = out[1:]
            self._write(out)
            watch = self._watch
            if watch and watch[0] in out:
                watch[1].set()
            if len(chunk) < SMALL_READ:
                time.sleep(GATHER_S)
        return None

    def _write(self, data: bytes) -> None:
        """Append to the audit file; a write the file system refuses is noted (`writes.note`) and
        the audit keeps nothing more: it is no longer complete (``failed``), the run stops."""
        if self._fd is not None and self.failed is None:
            try:
                os.write(self._fd, data)
            except OSError as e:
                if not writes.unwritable(e):
                    raise
                self.failed = e
                writes.note(self.path, e)

    def drain(self, admin: redis.Redis, timeout_s: float = 10.0, marker: str | None = None) -> bool:
        """Wait until everything the store executed before now is on disk (True) — by sending
        an ``ECHO`` marker on ``admin`` and watching for it in the stream."""
        if not (self._thread and self._thread.is_alive()):
            return False
        self._drains += 1
        marker = marker or f"{AUDIT_DRAIN_MARKER}{self._drains}"
        seen = threading.Event()
        self._watch = (f'"ECHO" "{marker}"'.encode(), seen)
        try:
            admin.echo(marker)
            return seen.wait(timeout_s)
        except redis.RedisError:
            return False
        finally:
            self._watch = None

    def expect_restart(self, reason: str) -> None:
        """The store is about to be killed on purpose: record ``# restart`` instead of a gap."""
        self._at_restart.clear()
        self._restart = reason

    def resume(self, timeout_s: float = 10.0) -> None:
        """After the store came back: attach a new MONITOR connection (before any client)."""
        if not self._at_restart.wait(timeout_s):
            raise ConnectionError("the audit did not see the store go down")
        old, self._sock = self._sock, self._connect(timeout_s)
        try:
            old.close()
        except OSError:
            pass
        self._resumed.set()

    def finish(self, admin: redis.Redis, timeout_s: float = 30.0) -> bool:
        """Drain the audit up to now; True when it is complete (``# end`` written)."""
        complete = self.drain(admin, timeout_s, marker=END_MARKER)
        self._stopping.set()
        if self._thread:
            self._thread.join(2)
        if complete and self.failed is None:
            self._write(f"{AUDIT_END}\n".encode())
        self.close()
        return complete and self.failed is None

    def close(self) -> None:
        self._stopping.set()
        if self._thread:
            self._thread.join(2)
        if self._sock:
            try:
                self._sock.close()
            except OSError:
                pass
            self._sock = None
        if self._fd is not None:
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
        try:
            with open(self.path, "a") as f:
                f.write(json.dumps(line) + "\n")
        except OSError as e:
            if not writes.unwritable(e):
                raise
            writes.note(self.path, e)

    def _loop(self) -> None:
        while not self._stop.wait(self.interval_s):
            self.sample()

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(5)
        self.sample()
