"""A store node of a run, and everything the harness keeps per node.

A run holds a list of nodes (``Run.nodes``: ``node1`` alone under ``--topology single``,
``node1``..``nodeN`` under ``redlock`` and ``replicated``). Each node is one store
(``leasecheck.harness.stores``: embedded, external, docker or compose), the harness's direct connection to it
(``admin``: faults, probes, the clock sampler), its audit (the ``MONITOR`` recorder), its clock
sampler, the workers' proxy to it when network faults are planned, and the names of its files.
A fault finds the node it acts on with ``FaultContext.node_for(target)``.

File names: a run of one node keeps the names every run directory has always had, which the
checker reads (``docs/history.md``)::

    audit.log  store-clock.jsonl  store.log  faketime/store      proxy leasecheck-<run id>

A run of several nodes names every node's files after it, ``node1`` included, so that no file of
one node can be taken for another's::

    audit-node2.log  store-clock-node2.jsonl  store-node2.log  faketime/store-node2
    proxy leasecheck-<run id>-node2
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import redis

from leasecheck.harness.record.audit import ClockSampler, MonitorRecorder
from leasecheck.harness.record.own import harness_client
from leasecheck.harness.proxy.path import ProxyPath
from leasecheck.harness.stores.base import Store
from leasecheck.harness.stores.kinds import store_for
from leasecheck.rundir import FAKETIME, node_names


@dataclass(frozen=True)
class NodeFiles:
    """Where one node's records go in the run directory (see the module's docstring)."""
    suffix: str          # "" for the only node of a run, "-node2" for a node among several
    audit: Path          # the MONITOR stream
    clock: Path          # samples of the store's clock against the history clock
    log: Path            # the store's own log
    faketime: Path       # the libfaketime timestamp file its clock follows, when skewed

    @classmethod
    def of(cls, run_dir: Path, name: str, alone: bool) -> "NodeFiles":
        """The names are ``leasecheck.rundir.node_names``'."""
        n = node_names(name, alone)
        return cls(suffix=n.suffix, audit=run_dir / n.audit, clock=run_dir / n.clock,
                   log=run_dir / n.log, faketime=run_dir / FAKETIME / n.faketime)


@dataclass
class Node:
    """One store node and its per-node recorders; the runner starts and stops them in order."""
    name: str
    store: Store
    files: NodeFiles
    admin: redis.Redis | None = None
    audit: MonitorRecorder | None = None
    clock: ClockSampler | None = None
    proxy: ProxyPath | None = None

    def start_proxy(self, run_dir: Path, run_id: str, toxiproxy_url: str | None) -> ProxyPath:
        """The workers' way to this node through a Toxiproxy proxy (the store is started)."""
        self.proxy = ProxyPath(run_dir, run_id, self.store.port, toxiproxy_url,
                               name=f"leasecheck-{run_id}{self.files.suffix}")
        self.proxy.start()
        return self.proxy

    def connect(self, db: int) -> redis.Redis:
        """The harness's own connection, straight to the store (never through the proxy)."""
        self.admin = harness_client(self.store.host, self.store.port, "admin", db=db, socket_timeout=10)
        return self.admin

    def start_audit(self) -> None:
        self.audit = MonitorRecorder(self.store.host, self.store.port, self.files.audit)
        self.audit.start()

    def start_clock(self, t0_ns: int) -> None:
        self.clock = ClockSampler(self.admin, self.files.clock, t0_ns)
        self.clock.start()

    def stop_recorders(self) -> bool:
        """Stop sampling the clock and drain the audit; whether the audit is complete."""
        if self.clock:
            self.clock.stop()
        if self.audit:
            return self.audit.finish(self.admin) if self.admin else False
        return False

    def stop(self) -> None:
        """Stop the store, then the proxy to it."""
        self.store.stop()
        if self.proxy:
            self.proxy.stop()


def nodes_for(cfg, run_dir: Path, skew_store: bool, names: tuple[str, ...] = ("node1",)) -> list[Node]:
    """The run's store nodes, not started: one per name (``node1`` alone for a single store). ``skew_store``:
    each store's clock follows its own timestamp file (a clock fault on the store is planned)."""
    nodes = []
    for name in names:
        files = NodeFiles.of(Path(run_dir), name, alone=len(names) == 1)
        store = store_for(cfg, run_dir, files.log, files.faketime if skew_store else None, node=name)
        nodes.append(Node(name, store, files))
    return nodes
