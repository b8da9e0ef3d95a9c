"""What every fault is, and what it may touch.

A fault kind is a small class that declares what it is (``Fault``'s attributes: name, targets,
parameters, whether it needs the proxy or a store the harness started, what it measures, which
ledger entries it writes), and three methods:

- ``validate(cfg, target)`` — before anything starts: raise ``UsageError`` if this fault cannot
  run in this configuration (an external store, a store binary libfaketime crashes, ...);
- ``start(ctx, step)`` — act, having first written its undo into ``ctx.ledger``; returns an
  ``Active`` holding whatever ``stop`` needs;
- ``stop(ctx, active)`` — undo it (through the ledger) and return what was measured: each kind
  measures its own effect while it acts (``leasecheck.checkers.read.faults`` judges it against the request).

Faults never sleep for their duration: the nemesis decides when ``stop`` is called.
"""
from __future__ import annotations

import random
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from leasecheck.harness.errors import UsageError
from leasecheck.harness.stores.topology import node_names
from leasecheck.protocol import ROLE_TARGETS, is_node

if TYPE_CHECKING:
    from leasecheck.harness.stores.node import Node


PINNED_NODE = "node"   # a step's param: the node `FaultContext.pin` chose for a target that names none


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
    """Everything a fault may touch during a run (wired by the runner). What belongs to a store
    node — the store, the admin connection, its audit, the workers' proxy to it — is on that
    ``Node``; a fault asks ``node_for(step.target)`` for the one it acts on."""
    cfg: Any                 # RunConfig
    run_dir: Path
    ledger: Any              # leasecheck.harness.nemesis.heal.Ledger
    workers: list            # subprocess.Popen per worker index
    holders: Any             # leasecheck.harness.run.holders.HolderTable
    rng: random.Random
    nodes: list[Node] = field(default_factory=list)   # the run's store nodes (one, or several: redlock, replicated)
    faketime_dir: Path | None = None                   # the workers' timestamp files (w0, w1, ...)
    replies: Any = None      # leasecheck.harness.run.replies.Replies: the workers' answers to probes
    replication: Any = None  # leasecheck.harness.stores.replication.Replication (--topology replicated)
    killed: set = field(default_factory=set)   # worker indexes kill:holder killed (no crash of the run)
    record: Any = None       # record(type, **fields): a nemesis event in the history (set by the nemesis)

    @property
    def node(self) -> Node:
        """The first node: a single store's only one (``node1`` of several)."""
        if not self.nodes:
            raise LookupError("this run has no store node")
        return self.nodes[0]

    def node_for(self, target: str) -> Node:
        """The node a step acts on: the one its target names (``node2``), else the first — a
        target such as ``store`` or ``workers`` means the first node (a single store's only
        one). In a replicated run ``primary`` is the node that is primary now, ``replica`` one of the others at random."""
        if target in ROLE_TARGETS and self.replication is not None:
            if target == "primary":
                return self.replication.primary()
            return self.rng.choice(self.replication.replicas())
        for node in self.nodes:
            if node.name == target:
                return node
        return self.node

    def node_of(self, step: Step) -> Node:
        """The node ``step`` acts on: the one `pin` recorded in its params (a fault whose target
        is no node, such as oneway's ``replies``), else the one its target names."""
        return self.node_for(step.params.get(PINNED_NODE) or step.target)

    def pin(self, step: Step, fault: "Fault") -> tuple[Step, dict]:
        """``step`` as ``fault`` runs it, and the node to record for it (``{"node": name}``, or
        {}). In a replicated run the node a step acts on is chosen once, when it starts, and kept
        to its heal even if the roles change meanwhile (a failover): a role (``primary``,
        ``replica``) names the node in that role; the run's store or the workers' path to it
        (the fault's ``node_target``: ``pause:store``, ``evict:store``, ``latency:workers``) and a
        target that is no node at all on the workers' path (``oneway:replies``) mean the primary
        — where the workers' commands go — never simply the first node."""
        if self.replication is None or not (step.target in ROLE_TARGETS or fault.node_target or fault.needs_proxy):
            return step, {}
        if step.target in ROLE_TARGETS or (fault.node_target and step.target == fault.node_target):
            node = self.node_for(step.target if step.target in ROLE_TARGETS else "primary")
            return replace(step, target=node.name), {"node": node.name}
        if fault.needs_proxy and not is_node(step.target) and not fault.node_target:
            node = self.node_for("primary")
            return replace(step, params={**step.params, PINNED_NODE: node.name}), {"node": node.name}
        return step, {}


@dataclass(frozen=True)
class Param:
    """A setting of one fault, as a scenario event's key (``offset = "+6s"``): how its value reads
    (``duration`` in seconds, ``signed`` duration, ``ms`` a duration in milliseconds, ``choice``
    one of ``choices``) and where it goes in the step (``size``, or a key of ``params``)."""
    key: str
    kind: str
    into: str
    help: str = ""
    choices: tuple[str, ...] = ()


class Fault:
    """One fault kind, described in one place; ``leasecheck.harness.faults`` finds every subclass with a
    ``name`` in the package and builds the registry, the CLI help and the checks from these
    attributes. Its module registers the undo of each ledger entry it writes
    (``@leasecheck.harness.nemesis.heal.undoes(kind)``) and lists those kinds in ``undoes``."""
    name = ""
    order = 100                      # its place in lists (help, error messages)
    summary = ""                     # what it does, in a few words (for --help)
    targets: tuple[str, ...] = ()
    default_target = ""
    options: tuple[str, ...] = ()    # a third word in --nemesis NAME:TARGET:OPTION (clock's direction)
    params: tuple[Param, ...] = ()   # scenario event keys beyond at, fault, target, duration
    needs_proxy = False              # acts on the workers' path to the store (the proxy)
    node_target = ""                 # a target naming a node (node2) acts as this one on that node
    store_targets: tuple[str, ...] = ()   # targets acting on the store's process, clock or memory:
    acts = ""                        # ... what it does there ("pauses the store process"); only a
    #                                  store the harness started (never --store-url, never compose)
    lasts_ttls = True                # random schedule: 0.5-3 TTLs (else: the gap to the next fault)
    measures: tuple[str, ...] = ()   # what ``stop`` returns (``measured`` of ``fault_end``)
    undoes: tuple[str, ...] = ()     # the ledger entry kinds it writes

    def uses_proxy(self, target: str) -> bool:
        """Whether this fault on ``target`` acts on the workers' path (default: ``needs_proxy``)."""
        return self.needs_proxy

    def acts_as(self, target: str) -> str:
        """The target ``target`` acts as: ``store`` for a node's name (``node2``) when the fault
        has ``node_target = "store"``; ``target`` itself otherwise."""
        return self.node_target if self.node_target and is_node(target) else target

    def validate(self, cfg, target: str) -> None:
        """Raise ``UsageError`` if this fault cannot act on ``target`` in this configuration; the
        message starts with ``NAME:TARGET`` (the caller says where it was asked for)."""
        if self.node_target and is_node(target):
            names = node_names(cfg) if hasattr(cfg, "topology") else ("node1",)
            if target in ROLE_TARGETS:
                if getattr(cfg, "topology", "single") != "replicated":
                    raise UsageError(f"{self.name}:{target}: only a replicated run has a {target} "
                                     f"(add --topology replicated, or name a node: {self.name}:node1)")
            elif target not in names:
                raise UsageError(f"{self.name}:{target}: this run's nodes are {', '.join(names)} "
                                 "(more with --topology redlock --nodes N)")
            target = self.node_target
        if target not in self.targets:
            raise UsageError(f"{self.name}:{target}: {self.name} targets are {', '.join(self.targets)}")
        if target in self.store_targets:
            if getattr(cfg, "backend", "embedded") == "compose":
                raise UsageError(f"{self.name}:{target}: with --backend compose the stack owns the store, which "
                                 f"the harness never faults ({self.name}:{target} {self.acts}); use --backend docker "
                                 "(the harness starts and faults its own container) or drop that fault")
            if cfg.store_url:
                others = [t for t in self.targets if t not in self.store_targets]
                instead = f"use {self.name}:{others[0]}" if others else f"drop the {self.name} fault"
                raise UsageError(f"{self.name}:{target} {self.acts}, which the harness only does to a store it "
                                 f"started; drop --store-url or {instead}")

    def default_size(self, cfg, rng: random.Random, target: str = "", option: str | None = None) -> float | None:
        """The size a random schedule draws for this fault on ``target`` (None: no size)."""
        return None

    def drawn_params(self, target: str, size: float | None) -> dict:
        """The ``params`` a random schedule gives a step of this fault on ``target`` of ``size``."""
        return {}

    def start(self, ctx: FaultContext, step: Step) -> Active:
        raise NotImplementedError

    def stop(self, ctx: FaultContext, active: Active) -> dict:
        raise NotImplementedError
