"""The healing ledger: every fault writes down how to undo itself *before* it acts.

The ledger lives in the run directory as ``faults-active.json`` (``{"owner": {"pid", "started"},
"entries": [...]}``: the harness that owns it) and is rewritten (atomically) on every change, so a harness killed with SIGKILL mid-fault leaves exactly the list of things still
to undo. ``heal_all`` undoes them; ``leasecheck cleanup`` (and the start of every run) finds such
files under the results directory and heals them.

An undo entry is a small JSON object with a ``kind``; the module that writes an entry registers
its undo with ``@undoes(kind)`` (this module knows only ``sigcont``):

- ``{"kind": "sigcont", "pid": P, "started": T}`` — continue a stopped process (``started`` is the
  process's start time from /proc, so a recycled PID is never signalled);
- ``{"kind": "faketime", "path": F}`` — write ``+0`` into a libfaketime timestamp file;
- ``{"kind": "redis-config", "host": H, "port": P, "settings": {...}}`` — ``CONFIG SET`` them back;
- ``{"kind": "redis-del-prefix", "host": H, "port": P, "prefix": K}`` — delete filler keys;
- ``{"kind": "toxic", "api": URL, "proxy": NAME, "toxic": NAME}`` — remove a Toxiproxy toxic;
- ``{"kind": "proxy-enable", "api": URL, "proxy": NAME}`` — re-enable a disabled proxy;
- ``{"kind": "docker-unpause", "container": ID}`` — unpause a frozen store container.

Store containers (label ``leasecheck=1``) whose harness is gone are removed by the docker
backend (``leasecheck.harness.stores.container.remove_leftovers``).
"""
from __future__ import annotations

import json
import os
import signal
import threading
from pathlib import Path
from typing import Callable

from leasecheck.harness.run.host import proc_started
from leasecheck.harness.record import writes
from leasecheck.rundir import FAULTS_ACTIVE as LEDGER



class Ledger:
    """Thread-safe list of pending undo entries, mirrored to ``run_dir/faults-active.json``."""

    def __init__(self, run_dir: Path):
        self.path = Path(run_dir) / LEDGER
        self._lock = threading.Lock()
        self._entries: dict[int, dict] = {}
        self._next = 0
        # The harness that owns the faults: while it lives, no other run heals them.
        self._owner = {"pid": os.getpid(), "started": proc_started(os.getpid())}

    def add(self, entry: dict) -> int:
        with self._lock:
            ident = self._next
            self._next += 1
            self._entries[ident] = entry
            self._save()
            return ident

    def done(self, ident: int) -> None:
        """Forget a healed entry. A file system that refuses the write does not stop the healing:
        the entry is gone from memory, and once every entry is healed the file is removed (which
        needs no space)."""
        with self._lock:
            self._entries.pop(ident, None)
            try:
                self._save()
            except OSError as e:
                if not writes.unwritable(e):
                    raise

    def pending(self) -> list[dict]:
        with self._lock:
            return list(self._entries.values())

    def heal(self, ident: int) -> str | None:
        """Undo one entry and forget it; returns an error text if the undo failed."""
        with self._lock:
            entry = self._entries.get(ident)
        err = undo(entry) if entry else None
        self.done(ident)
        return err

    def heal_all(self) -> list[str]:
        with self._lock:
            idents = list(self._entries)
        return [e for e in (self.heal(i) for i in reversed(idents)) if e]

    def _save(self) -> None:
        if not self._entries:
            try:
                self.path.unlink()
            except FileNotFoundError:
                pass
            return
        tmp = self.path.with_suffix(".tmp")
        doc = {"owner": self._owner, "entries": list(self._entries.values())}
        try:
            tmp.write_text(json.dumps(doc, indent=1) + "\n")
            os.replace(tmp, self.path)
        except OSError as e:
            tmp.unlink(missing_ok=True)
            if writes.unwritable(e):
                writes.note(self.path, e)
            raise


UNDO: dict[str, Callable[[dict], None]] = {}


def undoes(kind: str):
    """Register how an undo entry of ``kind`` is carried out. The module that writes an entry
    registers its undo next to it (a fault's module, a store backend), so the ledger knows no fault
    and no backend, and adding a fault adds its undo in the same place."""
    def register(fn: Callable[[dict], None]) -> Callable[[dict], None]:
        if UNDO.get(kind, fn) is not fn:
            raise ValueError(f"two undos registered for {kind!r}")
        UNDO[kind] = fn
        return fn
    return register


@undoes("sigcont")
def _continue(entry: dict) -> None:
    """A stopped process (a worker, the embedded store): SIGCONT, if it is still that process."""
    pid = int(entry["pid"])
    if proc_started(pid) == entry.get("started"):
        os.kill(pid, signal.SIGCONT)


def undo(entry: dict) -> str | None:
    """Carry out one undo entry; None on success (or nothing left to undo), else the error."""
    kind = entry.get("kind")
    fn = UNDO.get(kind)
    if fn is None:
        return f"unknown undo entry {entry!r}"
    try:
        fn(entry)
    except ProcessLookupError:
        return None
    except Exception as e:  # report, keep healing the rest
        return f"could not undo {kind} ({entry}): {type(e).__name__}: {e}"
    return None


def heal_leftovers(results_dir: Path) -> list[str]:
    """Heal every ledger left under ``results_dir`` by killed runs — never one whose harness still
    runs (two runs may share a results directory) — and return what was done. (Store containers
    whose harness is gone are the docker backend's to remove.)"""
    done = []
    for path in sorted(Path(results_dir).glob(f"*/*/{LEDGER}")):
        try:
            doc = json.loads(path.read_text())
        except (OSError, ValueError) as e:
            done.append(f"{path}: unreadable ({e}); left in place")
            continue
        if isinstance(doc, list):      # written before ledgers named their owner
            doc = {"owner": None, "entries": doc}
        owner = doc.get("owner")
        if owner and proc_started(int(owner["pid"])) == owner.get("started"):
            continue                   # a run still going: its faults are its own to heal
        entries = doc.get("entries") or []
        errors = [err for err in (undo(e) for e in reversed(entries)) if err]
        if errors:
            done.append(f"{path}: " + "; ".join(errors))
            continue
        path.unlink()
        done.append(f"{path.parent}: healed {len(entries)} fault(s)")
    return done
