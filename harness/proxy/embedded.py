"""Start and stop the proxy as a child process (``python -m leasecheck.harness.proxy``) from Python.

    proxy = EmbeddedProxy(run_dir)        # log: run_dir/proxy.log (or pass a file path)
    api_url = proxy.start()               # "http://127.0.0.1:<port>", once it printed "ready"
    client = proxy.client()               # a toxiproxy.Toxiproxy pointed at it
    ...
    proxy.stop()                          # SIGTERM by PID, SIGKILL if it will not go

The child runs in its own session (Ctrl-C in the terminal reaches the parent first) and
exits by itself when the parent dies: it watches its stdin, a pipe whose other end only
this object holds.
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import IO

from toxiproxy import Toxiproxy

from leasecheck.harness.proxy.errors import ProxyStartError

_REPO_ROOT = Path(__file__).resolve().parents[2]


class EmbeddedProxy:
    def __init__(self, run_dir_or_log_path: str | os.PathLike, host: str = "127.0.0.1",
                 port: int = 0, seed: int | None = None, config: str | os.PathLike | None = None,
                 verbose: bool = False, python: str | None = None):
        path = Path(run_dir_or_log_path)
        self.log_path = path / "proxy.log" if path.is_dir() else path
        self.host = host
        self.port = port                      # the API port; the real one once started
        self.seed = seed
        self.config = config
        self.verbose = verbose
        self.python = python or sys.executable
        self.proc: subprocess.Popen | None = None
        self._log: IO[bytes] | None = None
        self._reader: threading.Thread | None = None
        self._ready = threading.Event()

    # -- public --------------------------------------------------------------------------
    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc is not None else None

    @property
    def api_url(self) -> str:
        return f"http://{self.host}:{self.port}"

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def start(self, timeout_s: float = 15.0) -> str:
        """Start the child and wait for its ``ready <port>`` line; returns the API URL."""
        if self.running:
            return self.api_url
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        self._log = open(self.log_path, "ab")
        cmd = [self.python, "-m", "leasecheck.harness.proxy", "--host", self.host, "--port", str(self.port),
               "--watch-stdin"]
        if self.seed is not None:
            cmd += ["--seed", str(self.seed)]
        if self.config is not None:
            cmd += ["--config", str(Path(self.config).resolve())]
        if self.verbose:
            cmd.append("--verbose")
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(p for p in (str(_REPO_ROOT), env.get("PYTHONPATH")) if p)
        env["PYTHONUNBUFFERED"] = "1"
        self._ready.clear()
        self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=self._log, env=env, start_new_session=True)
        self._reader = threading.Thread(target=self._read_stdout, name="proxy-stdout", daemon=True)
        self._reader.start()
        deadline = time.monotonic() + timeout_s
        while not self._ready.wait(0.05):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                why = (f"exited with status {self.proc.returncode}" if self.proc.poll() is not None
                       else f"not ready after {timeout_s:g} s")
                self.stop()
                raise ProxyStartError(f"proxy {why}; log {self.log_path}:\n{self._log_tail()}")
        return self.api_url

    def stop(self, timeout_s: float = 5.0) -> None:
        """Stop the child by its PID: SIGTERM, then SIGKILL after ``timeout_s``."""
        proc = self.proc
        if proc is not None:
            if proc.poll() is None:
                try:
                    os.kill(proc.pid, signal.SIGTERM)
                    proc.wait(timeout_s)
                except subprocess.TimeoutExpired:
                    os.kill(proc.pid, signal.SIGKILL)
                    proc.wait()
                except ProcessLookupError:
                    pass
            if proc.stdin is not None:
                try:
                    proc.stdin.close()
                except OSError:
                    pass
        if self._reader is not None:
            self._reader.join(timeout=2)
            self._reader = None
        if proc is not None and proc.stdout is not None:
            proc.stdout.close()
        if self._log is not None:
            self._log.close()
            self._log = None

    def client(self):
        """A ``toxiproxy.Toxiproxy`` pointed at this proxy.

        Note: toxiproxy-python keeps host and port on a class, so this re-points every client
        in the process."""
        client = Toxiproxy()
        client.update_api_consumer(self.host, self.port)
        return client

    def __enter__(self) -> EmbeddedProxy:
        self.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    # -- internals -----------------------------------------------------------------------
    def _read_stdout(self) -> None:
        proc, log = self.proc, self._log
        assert proc is not None and proc.stdout is not None and log is not None
        for line in proc.stdout:
            if not self._ready.is_set() and line.startswith(b"ready "):
                try:
                    self.port = int(line.split()[1])
                except (IndexError, ValueError):
                    pass
                else:
                    self._ready.set()
                    continue
            try:
                log.write(line)
                log.flush()
            except (ValueError, OSError):   # log closed by stop()
                return

    def _log_tail(self, lines: int = 20) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""
