"""The healing ledger: every fault writes down how to undo itself *before* it acts.

The ledger lives in the run directory as ``faults-active.json`` and is rewritten (atomically) on
every change, so a harness killed with SIGKILL mid-fault leaves exactly the list of things still
to undo. ``heal_all`` undoes them; ``leasecheck cleanup`` (and the start of every run) finds such
files under the results directory and heals them.

An undo entry is a small JSON object with a ``kind``:

- ``{"kind": "sigcont", "pid": P, "started": T}`` — continue a stopped process (``started`` is the
  process's start time from /proc, so a recycled PID is never signalled);
- ``{"kind": "faketime", "path": F}`` — write ``+0`` into a libfaketime timestamp file;
- ``{"kind": "redis-config", "host": H, "port": P, "settings": {...}}`` — ``CONFIG SET`` them back;
- ``{"kind": "redis-del-prefix", "host": H, "port": P, "prefix": K}`` — delete filler keys;
- ``{"kind": "toxic", "api": URL, "proxy": NAME, "toxic": NAME}`` — remove a Toxiproxy toxic;
- ``{"kind": "proxy-enable", "api": URL, "proxy": NAME}`` — re-enable a disabled proxy;
- ``{"kind": "docker-unpause", "container": ID}`` — unpause a frozen store container.

``heal_leftovers`` also removes store containers (label ``leasecheck=1``) whose harness is gone.
"""
from __future__ import annotations

import json
import os
import signal
import threading
from pathlib import Path

LEDGER = "faults-active.json"


def proc_started(pid: int) -> int | None:
    """The process's start time in clock ticks since boot (field 22 of /proc/PID/stat)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return int(f.read().rsplit(")", 1)[1].split()[19])
    except (OSError, IndexError, ValueError):
        return None


class Ledger:
    """Thread-safe list of pending undo entries, mirrored to ``run_dir/faults-active.json``."""

    def __init__(self, run_dir: Path):
        self.path = Path(run_dir) / LEDGER
        self._lock = threading.Lock()
        self._entries: dict[int, dict] = {}
        self._next = 0

    def add(self, entry: dict) -> int:
        with self._lock:
            ident = self._next
            self._next += 1
            self._entries[ident] = entry
            self._save()
            return ident

    def done(self, ident: int) -> None:
        with self._lock:
            self._entries.pop(ident, None)
            self._save()

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
        tmp.write_text(json.dumps(list(self._entries.values()), indent=1) + "\n")
        os.replace(tmp, self.path)


def undo(entry: dict) -> str | None:
    """Carry out one undo entry; None on success (or nothing left to undo), else the error."""
    kind = entry.get("kind")
    try:
        if kind == "sigcont":
            pid = int(entry["pid"])
            if proc_started(pid) == entry.get("started"):
                os.kill(pid, signal.SIGCONT)
        elif kind == "faketime":
            Path(entry["path"]).write_text("+0\n")
        elif kind == "redis-config":
            import redis

            r = redis.Redis(host=entry["host"], port=entry["port"], socket_timeout=5)
            for k, v in entry["settings"].items():
                r.config_set(k, v)
        elif kind == "redis-del-prefix":
            import redis

            r = redis.Redis(host=entry["host"], port=entry["port"], socket_timeout=5)
            for key in r.scan_iter(match=entry["prefix"] + "*", count=1000):
                r.unlink(key)
        elif kind == "toxic":
            import requests

            requests.delete(f"{entry['api']}/proxies/{entry['proxy']}/toxics/{entry['toxic']}", timeout=5)
        elif kind == "docker-unpause":
            from harness.backends.container import unpause

            unpause(entry["container"])
        elif kind == "proxy-enable":
            import requests

            requests.post(f"{entry['api']}/proxies/{entry['proxy']}", json={"enabled": True}, timeout=5)
        else:
            return f"unknown undo entry {entry!r}"
    except ProcessLookupError:
        return None
    except Exception as e:  # report, keep healing the rest
        return f"could not undo {kind} ({entry}): {type(e).__name__}: {e}"
    return None


def heal_leftovers(results_dir: Path, containers: bool = True) -> list[str]:
    """Heal every ledger left under ``results_dir`` by killed runs, then remove store containers
    whose harness is gone (``containers``); returns what was done."""
    done = []
    for path in sorted(Path(results_dir).glob(f"*/*/{LEDGER}")):
        try:
            entries = json.loads(path.read_text())
        except (OSError, ValueError) as e:
            done.append(f"{path}: unreadable ({e}); left in place")
            continue
        errors = [err for err in (undo(e) for e in reversed(entries)) if err]
        if errors:
            done.append(f"{path}: " + "; ".join(errors))
            continue
        path.unlink()
        done.append(f"{path.parent}: healed {len(entries)} fault(s)")
    if containers:
        from harness.backends.container import remove_leftovers

        done.extend(remove_leftovers())
    return done
