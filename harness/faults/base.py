"""What every fault is, and what it may touch.

A fault kind is a small class with a ``name``, the ``targets`` it accepts, and three methods:

- ``validate(cfg, target)`` — before anything starts: raise ``UsageError`` if this fault cannot
  run in this configuration (an external store, a store binary libfaketime crashes, ...);
- ``start(ctx, step)`` — act, having first written its undo into ``ctx.ledger``; returns an
  ``Active`` holding whatever ``stop`` needs;
- ``stop(ctx, active)`` — undo it (through the ledger) and return what was measured: each kind
  measures its own effect while it acts (``checkers.faults`` judges it against the request).

Faults never sleep for their duration: the nemesis decides when ``stop`` is called.
"""
from __future__ import annotations

import random
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.errors import UsageError


@dataclass
class Step:
    """One scheduled fault: start ``at`` seconds into the run and last ``duration`` seconds."""
    at: float
    fault: str
    target: str
    duration: float
    size: float | None = None        # pause: unused; clock: offset in s; latency: ms ...
    params: dict = field(default_factory=dict)

    def to_json(self) -> dict:
        return {"at": self.at, "fault": self.fault, "target": self.target,
                "duration": self.duration, "size": self.size, "params": self.params}

    @classmethod
    def from_json(cls, d: dict) -> "Step":
        return cls(d["at"], d["fault"], d["target"], d["duration"], d.get("size"), d.get("params") or {})


@dataclass
class Active:
    step: Step
    ledger_ids: list[int]
    started: float = field(default_factory=time.monotonic)
    data: dict[str, Any] = field(default_factory=dict)


@dataclass
class FaultContext:
    """Everything a fault may touch during a run (wired by the runner)."""
    cfg: Any                 # RunConfig
    run_dir: Path
    ledger: Any              # harness.heal.Ledger
    store: Any               # EmbeddedStore | ExternalStore
    workers: list            # subprocess.Popen per worker index
    holders: Any             # harness.holders.HolderTable
    admin: Any               # redis.Redis, direct to the store
    rng: random.Random
    faketime_dir: Path | None = None
    proxy: Any = None        # harness.proxy_path.ProxyPath: the workers' way to the store
    audit: Any = None        # harness.audit.MonitorRecorder
    replies: Any = None      # harness.replies.Replies: the workers' answers to probes


def refuse_external_store(cfg, fault: str, does: str, instead: str) -> None:
    """A fault that acts on the store's process, clock or memory touches only a store the harness
    started: with --store-url, a one-line error naming what to drop."""
    if cfg.store_url:
        raise UsageError(f"--nemesis {fault} {does}, which the harness only does to a store it "
                         f"started; drop --store-url or {instead}")


class Fault:
    name = ""
    targets: tuple[str, ...] = ()
    default_target = ""
    options: tuple[str, ...] = ()    # a third word in --nemesis NAME:TARGET:OPTION (clock's direction)
    needs_proxy = False              # acts on the workers' path to the store (the proxy)

    def validate(self, cfg, target: str) -> None:
        if target not in self.targets:
            raise UsageError(f"--nemesis {self.name}:{target}: {self.name} targets are "
                             f"{', '.join(self.targets)}")

    def default_size(self, cfg, rng: random.Random, target: str = "", option: str | None = None) -> float | None:
        """The size a random schedule draws for this fault on ``target`` (None: no size)."""
        return None

    def start(self, ctx: FaultContext, step: Step) -> Active:
        raise NotImplementedError

    def stop(self, ctx: FaultContext, active: Active) -> dict:
        raise NotImplementedError
