"""A stand-in worker for tests/harness/test_fork_server.py: ``main(args)`` as the worker's."""
from __future__ import annotations

import json
import os
import random
import signal
import sys

IMPORTED_IN = os.getpid()       # the process that imported this module (the fork server)


def _fds() -> list[int]:
    listing = os.listdir("/proc/self/fd")     # its own descriptor is in the listing, and gone after
    return sorted(int(fd) for fd in listing if os.path.exists(f"/proc/self/fd/{fd}"))


def main(args: list[str]) -> int:
    what = args[0]
    if what == "report":
        handlers = {signal.Signals(s).name: repr(signal.getsignal(s))
                    for s in (signal.SIGINT, signal.SIGTERM, signal.SIGCHLD, signal.SIGPIPE, signal.SIGHUP)}
        print(json.dumps({"pid": os.getpid(), "ppid": os.getppid(), "sid": os.getsid(0), "pgid": os.getpgid(0),
                          "imported_in": IMPORTED_IN, "env": dict(os.environ), "fds": _fds(), "argv": sys.argv,
                          "handlers": handlers, "random": random.random(),
                          "stdio": [os.isatty(0), os.isatty(1)]}), flush=True)
        return 0
    if what == "echo":              # a worker's protocol: ready, then a line back for each line in
        print("ready", flush=True)
        for line in sys.stdin:
            words = line.split()
            if words[:1] == ["exit"]:
                return int(words[1])
            print(f"got {line.strip()}", flush=True)
        return 7                    # stdin closed
    if what == "stderr":
        print("to the log", file=sys.stderr, flush=True)
        return 0
    if what == "exit":
        return int(args[1])
    if what == "_exit":
        os._exit(int(args[1]))
    if what == "raise":
        raise RuntimeError("from the child")
    if what == "sleep":
        print("ready", flush=True)
        signal.pause()
    return 99
