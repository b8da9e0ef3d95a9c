"""The fork server: one process that imports the worker's modules once and forks every worker.

A worker started fresh (``python -m leasecheck.harness.run.worker``) has its own copy of every
module it imports; a worker forked from a process that imported them shares those pages with its
siblings (the interpreter's code objects and their data, once in the caches for all of them). The
runner starts this server fresh, with the run's environment, as
``python -m leasecheck.harness.run.fork_server FD [--lease SPEC] MODULE...``: it imports each
``MODULE`` and the lease under test (``load_lease(SPEC)``; a lease that fails to import is left to
fail in the worker, where its traceback goes to ``workers.log`` as before), freezes what it built
out of the cyclic GC's way (``gc.freeze``) and then serves requests on ``FD``, its end of a
``SOCK_SEQPACKET`` socket pair:

- ``{"op": "spawn", "module": M, "args": [...], "env": {...}}`` with four descriptors (the child's
  stdin, stdout, stderr and the write end of its status pipe): forks a child and answers
  ``{"pid": PID}``, or ``{"error": "..."}`` when it cannot serve it — an environment other than its
  own (a worker under libfaketime needs ``LD_PRELOAD`` at exec), a module it did not import, or a
  server that is not fit to fork (a module it imported started a thread or opened a socket). The
  runner starts such a worker with ``subprocess.Popen`` as before.
- The server reaps each child as it exits and writes its exit code (``-N`` for signal ``N``, as
  ``Popen.returncode``) into that child's status pipe, then closes it.
- The socket closing (the runner ended, or closed it) ends the server; the runner ends it by its
  PID at the end of every run, failed or not.

The child becomes what ``subprocess.Popen([python, "-m", M, *args], stdin=PIPE, stdout=PIPE,
stderr=log, env=env, start_new_session=True)`` makes: a new session, the three descriptors on 0, 1
and 2 and every other one closed, the signal handlers a fresh interpreter starts with, ``random``
reseeded, ``sys.argv`` as ``-m`` sets it, and then ``sys.exit(M.main(args))`` — what the worker's
``__main__`` block does — so the interpreter's own exit runs (non-daemon threads joined, ``atexit``,
stdio flushed) and its exit status is the worker's. The server never starts a thread or a
connection, so a child inherits neither.

On the runner's side, `ForkServer` starts the server and `ForkServer.spawn` returns a `Forked`: the
part of ``subprocess.Popen`` the runner and the faults use (``pid`` — the worker's real PID, which
``pause:*`` stops and ``kill:holder`` kills —, ``stdin``, ``stdout``, ``poll``, ``wait``, ``kill``,
``returncode``), or ``None`` when the server cannot serve the request.
"""
from __future__ import annotations

import errno
import gc
import importlib
import json
import os
import random
import select
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

from leasecheck.workloads.leases import load_lease

MAX_MESSAGE = 1 << 20
UNKNOWN_EXIT = 255      # the returncode of a worker whose server died before it could report it
SPAWN_TIMEOUT_S = 120.0  # the server imports first: its first answer waits for that


# -- the runner's side ---------------------------------------------------------------------------
SERVER_MODULE = "leasecheck.harness.run.fork_server"


def forked_role(cmdline: str, parent_cmdline: str) -> str | None:
    """What a process is to a run's fork server, from its command line and its parent's (for
    tools that look at a run from outside, ``bench/chaos.py``, ``bench/scale.py``): ``"server"``,
    ``"worker"`` (one it forked, which keeps the server's command line), or None (neither)."""
    if SERVER_MODULE not in cmdline:
        return None
    return "worker" if SERVER_MODULE in parent_cmdline else "server"


class ForkServer:
    """The runner's handle on one fork server (started at once; it imports in the background)."""

    def __init__(self, modules: list[str], env: dict[str, str], stderr, lease: str | None = None):
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self._sock = ours
        self._lock = threading.Lock()
        self.env = dict(env)
        self.available = True
        self.refused: str | None = None      # why the server last declined a worker (for a reader of the run)
        argv = [sys.executable, "-m", SERVER_MODULE, str(theirs.fileno())]
        if lease is not None:
            argv += ["--lease", lease]
        try:
            self.proc = subprocess.Popen(argv + list(modules), stdin=subprocess.DEVNULL,
                                         stdout=subprocess.DEVNULL, stderr=stderr, env=self.env,
                                         pass_fds=[theirs.fileno()], start_new_session=True)
        except BaseException:
            ours.close()
            raise
        finally:
            theirs.close()
        self.pid = self.proc.pid

    def spawn(self, module: str, args: list[str], env: dict[str, str], stderr) -> "Forked | None":
        """A child running ``module.main(args)`` with ``env``, its stderr on the file ``stderr``;
        None when the server cannot serve it (start it with ``subprocess.Popen`` then)."""
        if not self.available or dict(env) != self.env:
            return None
        stdin_r, stdin_w = os.pipe()
        stdout_r, stdout_w = os.pipe()
        status_r, status_w = os.pipe()
        theirs, ours = [stdin_r, stdout_w, status_w], [stdin_w, stdout_r, status_r]
        try:
            request = json.dumps({"op": "spawn", "module": module, "args": [str(a) for a in args],
                                  "env": dict(env)}).encode()
            with self._lock:
                try:
                    socket.send_fds(self._sock, [request], [stdin_r, stdout_w, stderr.fileno(), status_w])
                    for fd in theirs:
                        os.close(fd)
                    theirs = []
                    reply = self._answer(SPAWN_TIMEOUT_S)
                except OSError:
                    reply = None
                if reply is None:
                    self.available = False       # dead or stuck: every worker from here on is started fresh
                    self.refused = "the fork server did not answer"
                    return None
            if "pid" not in reply:
                self.refused = reply.get("error")
                if reply.get("unfit"):
                    self.available = False
                return None
            w = Forked(int(reply["pid"]), [sys.executable, "-m", module, *args], stdin_w, stdout_r, status_r)
            ours = []
            return w
        finally:
            for fd in theirs + ours:
                os.close(fd)

    def _answer(self, timeout_s: float) -> dict | None:
        ready, _, _ = select.select([self._sock], [], [], timeout_s)
        if not ready:
            return None
        data = self._sock.recv(MAX_MESSAGE)
        return json.loads(data) if data else None

    def close(self, timeout_s: float = 5.0) -> int | None:
        """End the server: its socket closed, then (if it is still there after ``timeout_s``) killed
        by its PID, and reaped. Its children — the workers — are not touched. Returns its exit code."""
        self.available = False
        with self._lock:
            self._sock.close()
        try:
            return self.proc.wait(timeout_s)
        except subprocess.TimeoutExpired:
            os.kill(self.pid, signal.SIGKILL)
            return self.proc.wait()


class Forked:
    """A worker the fork server forked, seen as the runner sees a ``subprocess.Popen``. Its exit
    code comes through its status pipe (the server is its parent and reaps it)."""

    def __init__(self, pid: int, args: list[str], stdin_fd: int, stdout_fd: int, status_fd: int):
        self.pid = pid
        self.args = args
        self.returncode: int | None = None
        self.stdin = open(stdin_fd, "wb", buffering=0)
        self.stdout = open(stdout_fd, "rb", buffering=0)
        self._status = status_fd
        self._got = b""
        self._lock = threading.Lock()
        try:    # its own handle on the process, in case the server dies before it reports the exit
            self._pidfd: int | None = os.pidfd_open(pid)
        except (OSError, AttributeError):
            self._pidfd = None

    def poll(self) -> int | None:
        """As ``Popen.poll``: never blocks, also not while another thread waits for this child."""
        if self.returncode is not None or not self._lock.acquire(blocking=False):
            return self.returncode
        try:
            return self._read(0.0)
        finally:
            self._lock.release()

    def wait(self, timeout: float | None = None) -> int:
        code = self._wait(timeout)
        if code is None:
            raise subprocess.TimeoutExpired(self.args, timeout)
        return code

    def _wait(self, timeout: float | None) -> int | None:
        with self._lock:
            return self._read(timeout)

    def _read(self, timeout: float | None) -> int | None:
        deadline = None if timeout is None else time.monotonic() + timeout
        while self.returncode is None:
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            if self._status is not None:
                ready, _, _ = select.select([self._status], [], [], left)
                if not ready:
                    return None
                chunk = os.read(self._status, 64)
                if chunk:
                    self._got += chunk
                    if self._got.endswith(b"\n"):
                        self._done(int(self._got))
                    continue
                os.close(self._status)      # the server died before it reported this child
                self._status = None
                continue
            if self._pidfd is None:
                if not Path(f"/proc/{self.pid}").exists():
                    self._done(UNKNOWN_EXIT)
                    continue
                if deadline is not None and time.monotonic() >= deadline:
                    return None
                time.sleep(0.05)
                continue
            ready, _, _ = select.select([self._pidfd], [], [], left)
            if not ready:
                return None
            self._done(UNKNOWN_EXIT)
        return self.returncode

    def _done(self, code: int) -> None:
        self.returncode = code
        for fd in (self._status, self._pidfd):
            if fd is not None:
                os.close(fd)
        self._status = self._pidfd = None

    def send_signal(self, sig: int) -> None:
        if self.poll() is None:
            try:
                os.kill(self.pid, sig)
            except ProcessLookupError:
                pass

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)

    def terminate(self) -> None:
        self.send_signal(signal.SIGTERM)


# -- the server ----------------------------------------------------------------------------------
def _fit() -> str | None:
    """Why this process must not fork workers (None: it may): a thread besides the main one, or a
    socket besides the server's own (a connection a child would share)."""
    if threading.active_count() > 1:
        return f"{threading.active_count() - 1} thread(s) started while importing"
    return None


def _sockets(keep: set[int]) -> list[int]:
    out = []
    for name in os.listdir("/proc/self/fd"):
        fd = int(name)
        if fd in keep:
            continue
        try:
            if os.readlink(f"/proc/self/fd/{fd}").startswith("socket:"):
                out.append(fd)
        except OSError:
            pass
    return out


def _reset_child(startup: dict, fds: list[int]) -> None:
    """In the child, before the worker runs: what a fresh ``Popen`` would have made."""
    signal.set_wakeup_fd(-1)
    for sig, handler in startup.items():
        try:
            signal.signal(sig, handler)
        except (OSError, ValueError, TypeError):
            pass
    signal.pthread_sigmask(signal.SIG_SETMASK, [])
    os.setsid()
    stdin, stdout, stderr, status = fds
    for fd, target in ((stdin, 0), (stdout, 1), (stderr, 2)):
        os.dup2(fd, target, inheritable=True)
    os.closerange(3, os.sysconf("SC_OPEN_MAX") if os.sysconf("SC_OPEN_MAX") > 0 else 65536)
    random.seed()


def serve(sock: socket.socket, modules: dict, startup: dict, unfit: str | None) -> tuple | None:
    """Serve until the socket closes (returns None), or, in a child, return ``(module, args)``."""
    wake_r, wake_w = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
    signal.set_wakeup_fd(wake_w)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    children: dict[int, int] = {}       # pid -> its status pipe's write end

    def reap() -> None:
        while children:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            fd = children.pop(pid, None)
            if fd is None:
                continue
            try:
                os.write(fd, f"{os.waitstatus_to_exitcode(status)}\n".encode())
            except OSError:
                pass
            os.close(fd)

    def answer(reply: dict) -> None:
        try:
            sock.send(json.dumps(reply).encode())
        except OSError:
            pass

    while True:
        try:
            ready, _, _ = select.select([sock, wake_r], [], [])
        except InterruptedError:
            continue
        if wake_r in ready:
            try:
                while os.read(wake_r, 512):
                    pass
            except BlockingIOError:
                pass
            reap()
        if sock not in ready:
            continue
        try:
            data, fds, _flags, _addr = socket.recv_fds(sock, MAX_MESSAGE, 8)
        except OSError as e:
            if e.errno in (errno.EINTR, errno.EAGAIN):
                continue
            return None
        if not data:
            for fd in fds:
                os.close(fd)
            return None
        request = json.loads(data)
        error = None
        if request.get("op") != "spawn" or len(fds) != 4:
            error = "not a spawn request with four descriptors"
        elif unfit is not None:
            error = unfit
        elif request["module"] not in modules:
            error = f"module {request['module']} not imported here"
        elif request["env"] != dict(os.environ):
            error = "an environment other than the server's"
        if error is not None:
            for fd in fds:
                os.close(fd)
            answer({"error": error, "unfit": unfit is not None})
            continue
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:
            try:
                os.close(wake_r)
                os.close(wake_w)
                _reset_child(startup, fds)
                # the socket object still names a closed descriptor: forget it without closing
                sock.detach()
                return request["module"], request["args"]
            except BaseException:
                os._exit(UNKNOWN_EXIT)
        stdin, stdout, stderr, status = fds
        for fd in (stdin, stdout, stderr):
            os.close(fd)
        children[pid] = status
        answer({"pid": pid})
        reap()


def main(argv: list[str]) -> int:
    startup = {s: signal.getsignal(s) for s in signal.valid_signals()
               if s not in (signal.SIGKILL, signal.SIGSTOP) and signal.getsignal(s) is not None}
    signal.signal(signal.SIGINT, signal.SIG_IGN)     # the runner ends it; a Ctrl-C is the runner's
    sock = socket.socket(fileno=int(argv[0]))
    rest = argv[1:]
    lease = None
    if rest[:1] == ["--lease"]:
        lease, rest = rest[1], rest[2:]
    modules = {}
    for name in rest:
        modules[name] = importlib.import_module(name)
    if lease is not None:
        try:
            load_lease(lease)
        except BaseException:    # the worker imports it again, and its failure is reported there
            pass
    unfit = _fit()
    if unfit is None:
        extra = _sockets({sock.fileno()})
        if extra:
            unfit = f"{len(extra)} socket(s) opened while importing"
    gc.collect()
    gc.freeze()       # what the server built stays out of the children's collections (and its pages shared)
    served = serve(sock, modules, startup, unfit)
    if served is None:
        return 0
    module, args = served
    mod = modules[module]
    sys.argv = [getattr(mod, "__file__", None) or module, *args]
    return mod.main(args)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
