"""What the rest of the harness may ask of a store node, whatever runs it: the ``Store`` protocol.

The runner starts and stops it; the faults pause, resume, kill and restart it and move its clock
through its timestamp file; the recorders connect to its address. A kind the harness did not
start (``managed = False``: ``--store-url``, the compose stack) refuses every fault with
``StoreError`` — the preflight never plans one against it, so reaching it is a bug, not a
user's mistake.

A new kind is one module in this package with a class that satisfies this protocol
(``tests/harness/test_stores.py`` checks every kind against it) and a branch in
``kinds.store_for``.
"""
from __future__ import annotations

from pathlib import Path
from typing import Protocol, runtime_checkable


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

