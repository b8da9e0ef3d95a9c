"""Where a store node runs, one module per kind, all behind the ``Store`` protocol (``base``):

- ``embedded`` — a ``redis-server`` child process the harness starts, faults and stops (default);
- ``external`` — a store the harness did not start (``--store-url``): never faulted;
- ``container`` — the ``docker`` backend: a container the harness creates, faults and removes
  (``daemon`` reaches the Docker daemon, ``image`` builds the store image);
- ``compose`` — the stack of ``docker-compose.yml``, already up: its store is treated as external.

Every kind keeps the store on 127.0.0.1: containers use the host's network namespace and bind
loopback, and the harness never addresses a container IP. ``kinds.store_for`` picks the kind a
configuration asks for; a run wraps each store in a ``leasecheck.harness.stores.node.Node``.
"""
from __future__ import annotations

from leasecheck.harness.stores.base import Store

BACKENDS = ("embedded", "docker", "compose")    # --backend; --store-url picks ``external``

__all__ = ["BACKENDS", "Store"]
