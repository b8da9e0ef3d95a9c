"""Which store kind a configuration asks for (``--backend``, ``--store-url``), and that kind made.

A store node's files are the caller's to name (``leasecheck.harness.stores.node.NodeFiles``): a run of several nodes
gives each its own log and timestamp file.
"""
from __future__ import annotations

from pathlib import Path

from leasecheck.harness.stores.base import MASTER, ServerRole, Store
from leasecheck.harness.stores.compose import ComposeStore
from leasecheck.harness.stores.container import DockerStore
from leasecheck.harness.stores.embedded import EmbeddedStore
from leasecheck.harness.stores.external import ExternalStore


def store_for(cfg, run_dir: Path, log_path: Path, faketime_file: Path | None = None,
              node: str = "node1", role: ServerRole = MASTER) -> Store:
    """The store of ``cfg`` (a ``RunConfig`` the preflight completed), not started yet.
    ``faketime_file``: its clock follows that file; ``node``: its name (the docker kind names and
    labels its container after it); ``role``: what it runs as (only kinds the harness starts)."""
    if cfg.backend == "docker":
        return DockerStore(cfg.store_image, run_dir, cfg.run_id, cfg.store_port,
                           faketime_file=faketime_file, log_path=log_path, node=node, role=role)
    if cfg.backend == "compose":
        return ComposeStore(cfg.store_host, cfg.store_port, cfg.store_db)
    if cfg.store_url:
        return ExternalStore(cfg.store_host, cfg.store_port, cfg.store_db)
    return EmbeddedStore(cfg.store_bin, run_dir, cfg.store_port, faketime_file=faketime_file,
                         log_path=log_path, role=role)
