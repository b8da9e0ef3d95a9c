"""What the rest of the harness may ask of a store node, whatever runs it: the ``Store`` protocol.

The runner starts and stops it; the faults pause, resume, kill and restart it and move its clock
through its timestamp file; the recorders connect to its address. A kind the harness did not
start (``managed = False``: ``--store-url``, the compose stack) refuses every fault with
``StoreError`` — the preflight never plans one against it, so reaching it is a bug, not a
user's mistake.

What a node's server runs as — a plain master (the default), a replica, a Sentinel — is a
``ServerRole`` given to the kinds the harness starts (``kinds.store_for(..., role=)``).

A new kind is one module in this package with a class that satisfies this protocol
(``tests/harness/test_stores.py`` checks every kind against it) and a branch in
``kinds.store_for``.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol, runtime_checkable


@dataclass(frozen=True)
class ServerRole:
    """What a node's server runs as, beyond the volatile defaults every kind starts it with
    (127.0.0.1, its port, no RDB, no AOF): a topology of several kinds of node (a primary, its
    replicas, Sentinels) describes each node with one of these, and any kind the harness starts
    (``embedded``, ``docker``) runs it the same way.

    ``args`` go after the defaults on the server's command line (so they may override them);
    ``sentinel_conf`` starts the server in sentinel mode with that config file. Sentinel rewrites
    its file as it learns the topology, so it must be writable and sit in a folder of its own: the
    docker kind bind-mounts that folder read-write into the container. For example::

        replica = ServerRole(args=("--replicaof", "127.0.0.1", str(primary.port)))
        sentinel = ServerRole(sentinel_conf=run_dir / "sentinel-s1" / "sentinel.conf",
                              args=("--sentinel", "monitor", "leasecheck", "127.0.0.1",
                                    str(primary.port), "2"))

    (A ``--sentinel`` line on the command line is a line of the config file, as any other option.)
    """
    args: tuple[str, ...] = ()
    sentinel_conf: Path | None = None

    def argv(self, defaults: list[str], conf: str | None = None) -> list[str]:
        """The server's arguments: the config file and ``--sentinel`` first (Redis reads a config
        file only as its first argument), then ``defaults``, then ``args``. ``conf``: the config
        file's path as the server sees it (inside a container), if not ``sentinel_conf`` itself."""
        head = [conf or os.path.abspath(self.sentinel_conf), "--sentinel"] if self.sentinel_conf else []
        return [*head, *defaults, *self.args]


MASTER = ServerRole()      # a plain volatile master: the single store, each Redlock master


@runtime_checkable
class Store(Protocol):
    kind: str                      # embedded | external | docker | compose
    managed: bool                  # started by the harness, so it may be faulted
    host: str                      # always a loopback address
    port: int | None               # known once started
    faketime_file: Path | None     # the libfaketime timestamp file its clock follows (None: fixed)
    log_path: Path | None          # where its own log ends up (None: not the harness's to keep)

    @property
    def address(self) -> str:
        """``HOST:PORT``, as the recorders and the workers reach it."""

    @property
    def pid(self) -> int | None:
        """Its process on this host, when the harness knows it."""

    def start(self, timeout_s: float = ...) -> None:
        """Start it (or check that it answers) and learn its port; ``StoreError`` if it does not."""

    def stop(self, timeout_s: float = ...) -> None:
        """Stop it (a paused one too) and keep its log; nothing for a store the harness did not start."""

    def pause(self) -> None:
        """Freeze it: clients time out, queued commands run on ``resume``, expiries keep running."""

    def resume(self) -> None:
        """Undo ``pause``."""

    def resume_entry(self) -> dict:
        """The healing ledger's entry that undoes ``pause`` (written before pausing)."""

    def is_paused(self) -> bool:
        """The kernel's (or the daemon's) own word that it is frozen right now."""

    def kill(self) -> None:
        """SIGKILL, as a crash would: a volatile store loses every key."""

    def restart(self, timeout_s: float = ...) -> None:
        """Start again after ``kill``, on the same port, empty."""

