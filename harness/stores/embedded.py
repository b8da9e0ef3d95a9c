"""The ``embedded`` store kind: a ``redis-server`` child process (the default).

The embedded store listens on 127.0.0.1 only, keeps nothing on disk (no RDB, no AOF), writes
its log into the run directory, and is stopped by the runner at the end — also on Ctrl-C,
SIGTERM or a crash of the harness (it runs in its own session so Ctrl-C reaches the harness
first, and it is asked to die with its parent should the harness be killed outright).
"""
from __future__ import annotations

import ctypes
import os
import signal
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import redis

from leasecheck.harness.errors import StoreError
from leasecheck.harness.stores.base import MASTER, ServerRole
from leasecheck.harness.run.host import faketime_env, free_port, proc_started
from leasecheck.harness.run.procfs import is_stopped
from leasecheck.rundir import STORE_LOG

_PR_SET_PDEATHSIG = 1


def _die_with_parent() -> None:
    try:
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)
    except OSError:
        pass


class EmbeddedStore:
    """A volatile ``redis-server`` the harness starts and stops itself."""

    kind = "embedded"
    managed = True

    def __init__(self, binary: str, run_dir: Path, port: int | None = None,
                 faketime_file: Path | None = None, log_path: Path | None = None,
                 role: ServerRole = MASTER):
        self.binary, self.role = binary, role
        self.run_dir = Path(run_dir).resolve()   # the store runs in it (--dir): paths must not be relative
        self.log_path = Path(log_path).resolve() if log_path else self.run_dir / STORE_LOG
        # A clock the harness may move: libfaketime reads this file on every clock call.
        self.faketime_file = Path(faketime_file).resolve() if faketime_file else None
        self.env = faketime_env(self.faketime_file) if self.faketime_file else None
        self.host = "127.0.0.1"
        self.port = port
        self.proc: subprocess.Popen | None = None
        # The kernel's parent-death signal fires when the *thread* that forked the child exits,
        # so every launch (the first and each restart by a fault) happens on this one thread,
        # which lives as long as the store is ours.
        self._launcher = ThreadPoolExecutor(1, thread_name_prefix="store-launcher")

    def start(self, timeout_s: float = 10.0) -> None:
        fixed = self.port is not None
        for _ in range(1 if fixed else 5):
            port = self.port if fixed else free_port()
            if self._launch(port, timeout_s):
                self.port = port
                return
        raise StoreError(f"redis-server did not start; see {self.log_path}")

    def _launch(self, port: int, timeout_s: float) -> bool:
        log = self.log_path
        args = [self.binary, *self.role.argv([
            "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
            "--daemonize", "no", "--protected-mode", "yes", "--logfile", str(log), "--dir", str(self.run_dir)])]
        env = dict(os.environ, **self.env) if self.env else None
        self.proc = self._launcher.submit(
            subprocess.Popen, args, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, env=env,
            stderr=subprocess.DEVNULL, start_new_session=True, preexec_fn=_die_with_parent).result()
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                return False  # e.g. the port was taken between our probe and its bind
            try:
                if redis.Redis(host=self.host, port=port, socket_timeout=1).ping():
                    return True
            except redis.RedisError:
                time.sleep(0.02)
        self.stop()
        return False

    def stop(self, timeout_s: float = 5.0) -> None:
        proc, self.proc = self.proc, None
        self._launcher.shutdown(wait=False)
        if proc is None or proc.poll() is not None:
            return
        proc.send_signal(signal.SIGCONT)  # a paused store cannot shut down
        proc.terminate()
        try:
            proc.wait(timeout_s)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()

    def kill(self) -> None:
        """SIGKILL, as a crash would: a volatile store loses every key."""
        proc = self.proc
        if proc is not None and proc.poll() is None:
            proc.kill()
            proc.wait()

    def restart(self, timeout_s: float = 10.0) -> None:
        """Start again on the same port (after ``kill``), empty."""
        if self.port is None:
            raise StoreError("the store was never started, so it has no port to come back on")
        if not self._launch(self.port, timeout_s):
            raise StoreError(f"redis-server did not come back on port {self.port}; see {self.log_path}")

    def pause(self) -> None:
        """SIGSTOP: a stop-the-world stall (``resume`` or the ledger's ``sigcont`` undoes it)."""
        if self.pid is not None:
            os.kill(self.pid, signal.SIGSTOP)

    def resume(self) -> None:
        if self.pid is not None:
            os.kill(self.pid, signal.SIGCONT)

    def resume_entry(self) -> dict:
        """The ledger's undo for ``pause()`` (written before pausing)."""
        return {"kind": "sigcont", "pid": self.pid, "started": proc_started(self.pid) if self.pid else None}

    def is_paused(self) -> bool:
        """The kernel's word that the store process is stopped (state ``T``)."""
        return is_stopped(self.pid)

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc else None

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"
