"""``--lease exec:COMMAND ARGS...``: a lease in any language, run as a child process per slot.

The child speaks a line protocol on its stdin and stdout, one JSON object per line (protocol 1,
``docs/how-to/other-languages.md``)::

    started as COMMAND ARGS... with LEASECHECK_URL=redis://127.0.0.1:<port>/<db> (its slot's
    URL), LEASECHECK_SLOT=w0.s1 and LEASECHECK_PROTOCOL=1 in its environment
    child:   {"ready": true, "renew": true}        first line; "renew": whether it can renew
    harness: {"op": "acquire", "key": K, "ttl_ms": T, "url": U}
    child:   {"ok": true} | {"ok": false} | {"error": "text", "type": "ConnectionError"}
    harness: {"op": "release"}   ->  {"ok": true}: it deleted its own claim; false: found nothing
    harness: {"op": "renew"}     ->  {"ok": true}: extended; false: not
    stdin closes: exit.

Each ``acquire`` begins a new attempt (a fresh lock object, a fresh token); ``release`` and
``renew`` act on the attempt the last acquire began — a slot runs one attempt at a time. The child
writes nothing else to stdout; its stderr goes to the run's ``workers.log``.

The Python slot records every call around its exchange (``claim_loop.Slot._call``), so history,
audit, faults and checker work as for any lease. A reply ``{"error": ...}`` raises in the call (an
``info`` completion whose error is ``<type>: <text>``; ``type`` defaults to ``LeaseError``; a
``ConnectionError`` or ``TimeoutError`` counts as the store's path failing, as in Python). A child
that exits, that prints something other than a reply, or that says nothing within ``READY_S`` of
starting, raises in the call that met it (``LeaseProcessError``, naming the problem and the
child's last line on stderr); the child is then ended and the next acquire starts a new one.

The child runs in the worker's process group: a ``pause`` stops it with its worker, and the runner
ends the group when it kills a worker. ``check_command`` is the preflight's: the program on the
PATH, a script that exists, and for Node.js the ``node_modules`` its ``package.json`` needs.
"""
from __future__ import annotations

import json
import os
import re
import select
import shlex
import shutil
import subprocess
import sys
import threading
import time
from collections import deque
from pathlib import Path

from leasecheck.harness.errors import UsageError

PREFIX = "exec:"
PROTOCOL = 1
READY_S = 15.0          # a child that has not said ready by then is ended
EXIT_WAIT_S = 2.0       # closing: after stdin closes, how long the child has to exit before SIGKILL
STDERR_LINES = 5
_SCRIPT = (".js", ".mjs", ".cjs", ".ts", ".py", ".rb", ".sh")


class LeaseProcessError(Exception):
    """The lease's child process broke the protocol: it exited, printed garbage, never said ready."""


class LeaseError(Exception):
    """The lease's child answered ``{"error": ...}`` (the default type of its error)."""


_ERROR_TYPES: dict[str, type] = {"LeaseError": LeaseError}


def _error_type(name) -> type:
    """An exception class named as the child named its error's type (``ConnectionError``), so the
    history's ``error`` reads ``ConnectionError: ...`` as a Python lease's would."""
    name = name if isinstance(name, str) and re.fullmatch(r"[A-Za-z_][A-Za-z0-9_.]{0,60}", name) else "LeaseError"
    if name not in _ERROR_TYPES:
        _ERROR_TYPES[name] = type(name, (LeaseError,), {})
    return _ERROR_TYPES[name]


# -- the command ------------------------------------------------------------------------------

def parse(spec: str, base: Path | None = None) -> list[str]:
    """``exec:node lease.js`` -> ``["node", "lease.js"]``; a relative script path is taken from
    ``base`` (a built-in's: the repository) when given."""
    try:
        argv = shlex.split(spec[len(PREFIX):])
    except ValueError as e:
        raise UsageError(f"--lease {spec}: cannot split the command ({e}); quote it as a shell would") from None
    if not argv:
        raise UsageError(f"--lease {spec}: no command after exec:; e.g. --lease 'exec:node lease.js'")
    if base is not None:
        argv = [argv[0]] + [str(base / a) if _is_script(a) and not Path(a).is_absolute() else a for a in argv[1:]]
    return argv


def _is_script(arg: str) -> bool:
    return not arg.startswith("-") and arg.endswith(_SCRIPT)


def check_command(spec: str, argv: list[str]) -> None:
    """Refuse, naming the fix, a command that cannot start: no such program, no such script, a
    Node.js script whose ``package.json`` dependencies are not installed."""
    program = argv[0]
    if shutil.which(program) is None:
        hint = ("install Node.js 18 or later (Debian: apt-get install nodejs npm)" if program in ("node", "nodejs")
                else f"install it, or give its full path")
        raise UsageError(f"--lease {spec}: no program {program!r} on the PATH; {hint}")
    scripts = [a for a in argv[1:] if _is_script(a)]
    for script in scripts:
        if not Path(script).is_file():
            raise UsageError(f"--lease {spec}: no such file {script}")
    if Path(program).name.startswith("node") and scripts:
        _check_node_modules(spec, Path(scripts[0]))


def _check_node_modules(spec: str, script: Path) -> None:
    """The nearest ``package.json`` above the script: each of its dependencies must be installed
    in the ``node_modules`` beside it."""
    folder = script.resolve().parent
    for d in (folder, *folder.parents):
        manifest = d / "package.json"
        if manifest.is_file():
            break
    else:
        return
    try:
        deps = sorted((json.loads(manifest.read_text()).get("dependencies") or {}))
    except (OSError, ValueError) as e:
        raise UsageError(f"--lease {spec}: {manifest} is not readable JSON ({e})") from None
    missing = [n for n in deps if not (d / "node_modules" / n / "package.json").is_file()]
    if missing:
        where = os.path.relpath(d)
        raise UsageError(f"--lease {spec}: {where} lacks its dependencies ({', '.join(missing)} not in "
                         f"{os.path.join(where, 'node_modules')}); run npm install in {where}")


# -- one slot's child -------------------------------------------------------------------------

class Child:
    """The child process of one slot: started on demand, asked one line at a time."""

    def __init__(self, argv: list[str], process: str):
        self.argv, self.process = argv, process
        self.proc: subprocess.Popen | None = None
        self.url: str | None = None
        self.renews = False
        self._ready = False
        self._buf = b""
        self._stderr: deque[str] = deque(maxlen=STDERR_LINES)
        self._reader: threading.Thread | None = None

    @property
    def shown(self) -> str:
        return " ".join(self.argv)

    def start(self, url: str) -> None:
        """Start the child (without waiting for it to say ready)."""
        self.url = url
        env = dict(os.environ, LEASECHECK_URL=url, LEASECHECK_SLOT=self.process,
                   LEASECHECK_PROTOCOL=str(PROTOCOL))
        try:
            self.proc = subprocess.Popen(self.argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                         stderr=subprocess.PIPE, env=env, bufsize=0)
        except OSError as e:
            self.proc = None
            raise LeaseProcessError(f"the lease process ({self.shown}) could not start: {e}") from None
        self._ready, self._buf = False, b""
        self._stderr.clear()
        self._reader = threading.Thread(target=self._forward_stderr, args=(self.proc,), daemon=True,
                                        name=f"{self.process}-stderr")
        self._reader.start()

    def ask(self, message: dict) -> dict:
        """Send one request, return its reply; raises ``LeaseProcessError`` when the child broke
        the protocol (and ends it) or ``LeaseError`` (by the type it named) for an error reply."""
        op = message["op"]
        if self.proc is None or self.proc.poll() is not None:
            if op != "acquire":
                if self.proc is not None:
                    raise self._broken(f"exited before {op} (its attempt went with it)")
                raise LeaseProcessError(f"the lease process ({self.shown}) had been ended before {op} "
                                        "(its attempt went with it)")
            self.close()
            self.start(message.get("url") or self.url)
        if not self._ready:
            self._hello()
        try:
            self.proc.stdin.write((json.dumps(message) + "\n").encode())
        except (BrokenPipeError, OSError):
            raise self._broken(f"had closed its stdin when sent {op}") from None
        reply = self._reply(self._line(None, op), op)
        if "error" in reply:
            raise _error_type(reply.get("type"))(str(reply["error"])[:240])
        return reply

    def close(self) -> None:
        """Close its stdin (the child exits), then SIGKILL it if it lingers."""
        proc, self.proc = self.proc, None
        if proc is None:
            return
        try:
            proc.stdin.close()
        except OSError:
            pass
        try:
            proc.wait(EXIT_WAIT_S)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        for stream in (proc.stdout,):
            try:
                stream.close()
            except OSError:
                pass

    # -- inside ---------------------------------------------------------------------------------
    def _hello(self) -> None:
        line = self._line(time.monotonic() + READY_S, "its ready line")
        try:
            hello = json.loads(line)
        except ValueError:
            hello = None
        if not isinstance(hello, dict) or hello.get("ready") is not True:
            raise self._broken(f"began with {_clip(line)!r} instead of {{\"ready\": true}}")
        self.renews = hello.get("renew") is True
        self._ready = True

    def _line(self, deadline: float | None, waiting_for: str) -> str:
        """The child's next stdout line (EOF or ``deadline``: it is ended, and this raises)."""
        fd = self.proc.stdout.fileno()
        while b"\n" not in self._buf:
            if deadline is not None:
                left = deadline - time.monotonic()
                if left <= 0 or not select.select([fd], [], [], left)[0]:
                    raise self._broken(f"said nothing within {READY_S:g} s of starting (waiting for {waiting_for})")
            chunk = os.read(fd, 65536)
            if not chunk:
                raise self._broken(f"exited while the harness waited for {waiting_for}")
            self._buf += chunk
        line, _, self._buf = self._buf.partition(b"\n")
        return line.decode(errors="replace").strip()

    def _reply(self, line: str, op: str) -> dict:
        try:
            reply = json.loads(line)
        except ValueError:
            reply = None
        if isinstance(reply, dict) and (isinstance(reply.get("ok"), bool) or "error" in reply):
            return reply
        raise self._broken(f"answered {op} with {_clip(line)!r}, not a reply ({{\"ok\": true|false}} or "
                           "{\"error\": \"...\"}); a lease process writes nothing else on stdout")

    def _broken(self, what: str) -> LeaseProcessError:
        """End the child (it is out of step) and describe what it did, with its exit status and
        its last line on stderr."""
        proc = self.proc
        code = None
        if proc is not None:
            try:
                code = proc.wait(0.5)
            except subprocess.TimeoutExpired:
                pass
            self.close()
            if self._reader is not None:
                self._reader.join(0.5)   # the child's last words on stderr
        status = f" (exit code {code})" if code is not None else ""
        last = f"; its stderr ended: {_clip(self._stderr[-1])}" if self._stderr else ""
        return LeaseProcessError(f"the lease process ({self.shown}) {what}{status}{last}")

    def _forward_stderr(self, proc: subprocess.Popen) -> None:
        for raw in proc.stderr:
            line = raw.decode(errors="replace").rstrip()
            if line:
                self._stderr.append(line)
                try:
                    sys.stderr.write(f"[{self.process} lease] {line}\n")
                    sys.stderr.flush()
                except (OSError, ValueError):
                    pass


def _clip(text: str, n: int = 120) -> str:
    return text if len(text) <= n else text[:n] + "..."


# -- the lease the claim loop sees ------------------------------------------------------------

class ExecLease:
    """One attempt of a lease run by a child process (``Child``): each call is one exchange."""

    connect = "url"
    argv: list[str] = []

    def __init__(self, child: Child, url: str, key: str, ttl_ms: int):
        self.child, self.url, self.key, self.ttl_ms = child, url, key, ttl_ms

    @classmethod
    def for_slot(cls, process: str) -> "SlotLeases":
        return SlotLeases(cls, Child(cls.argv, process))

    def acquire(self) -> bool:
        return self.child.ask({"op": "acquire", "key": self.key, "ttl_ms": self.ttl_ms, "url": self.url})["ok"]

    def release(self) -> bool:
        return self.child.ask({"op": "release"})["ok"]

    @property
    def renew(self):
        """The renewal call when the child said it can renew (``"renew": true``), else None."""
        return self._renew if self.child.renews else None

    def _renew(self) -> bool:
        return self.child.ask({"op": "renew"})["ok"]


class SlotLeases:
    """A slot's lease factory: ``(url, key, ttl_ms) -> ExecLease`` on the slot's one child; the
    worker closes it when the slot has ended."""

    def __init__(self, cls: type, child: Child):
        self.cls, self.child = cls, child

    def __call__(self, url: str, key: str, ttl_ms: int) -> ExecLease:
        if self.child.proc is None and self.child.url is None:
            try:
                self.child.start(url)     # at the first attempt; said ready by its first acquire
            except LeaseProcessError:
                pass                      # its acquire tries again and reports it
        return self.cls(self.child, url, key, ttl_ms)

    def close(self) -> None:
        self.child.close()


def lease_class(spec: str, base: Path | None = None, name: str | None = None) -> type:
    """The lease class for ``exec:COMMAND...`` (checked: it can start). ``name``: the built-in
    name the user gave, whose script paths are relative to ``base`` (a source checkout)."""
    shown = name or spec
    argv = parse(spec, base)
    if base is not None:
        missing = [a for a in argv[1:] if _is_script(a) and not Path(a).is_file()]
        if missing:
            raise UsageError(f"--lease {shown} runs {missing[0]}, which is not here: the example leases come with a "
                             f"source checkout of leasecheck; run from one, or give --lease 'exec:COMMAND path/to/script'")
    check_command(shown, argv)
    return type("ExecLease", (ExecLease,), {"argv": argv, "spec": spec})
