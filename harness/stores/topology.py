"""How many store nodes a run has and what they are: ``--topology single|replicated|redlock``.

``single`` is one store, ``node1``, whose files keep the run directory's historic names.
``redlock`` is ``--nodes N`` independent masters (default 5, odd, at least 3), no replication
between them, each an embedded process or (``--backend docker``) a container of its own, with its own files (``leasecheck.harness.stores.node.NodeFiles``): the setting of the Redlock
algorithm, where a lease must win a majority of the masters.

``replicated`` is one primary (``node1`` at the start) and ``--replicas N`` replicas (default 1:
``node2``, ...) with Redis's asynchronous replication, watched by ``--sentinels N`` Redis Sentinels
(default 3) that promote a replica when the primary stops answering (``leasecheck.harness.stores.replication``).
A single-endpoint lease gets a client that finds the primary through the Sentinels and follows a
failover; a lease declaring ``nodes = "all"`` is refused there (the replicas refuse writes).

A lease that needs every node says so with the class attribute ``nodes = "all"`` and gets one
audited client per node (``workloads/leases/__init__.py``); under ``redlock`` a lease without it
is refused, because a single-endpoint lease would silently test one master of five.
"""
from __future__ import annotations

from leasecheck.harness.errors import UsageError
from leasecheck.workloads.leases import wants_url

TOPOLOGIES = ("single", "replicated", "redlock")
DEFAULT_REDLOCK_NODES = 5
DEFAULT_REPLICAS = 1
DEFAULT_SENTINELS = 3


def node_count(cfg) -> int:
    """The number of store nodes of ``cfg`` (checked by ``check``)."""
    if cfg.topology == "redlock":
        return cfg.nodes or DEFAULT_REDLOCK_NODES
    if cfg.topology == "replicated":
        return 1 + (getattr(cfg, "replicas", None) or DEFAULT_REPLICAS)
    return 1


def node_names(cfg) -> tuple[str, ...]:
    return tuple(f"node{i}" for i in range(1, node_count(cfg) + 1))


def needs_all_nodes(lease_cls) -> bool:
    """Whether the lease declares ``nodes = "all"`` (one client per node)."""
    return getattr(lease_cls, "nodes", None) == "all"


def check(cfg, lease_cls, say):
    """``cfg`` with its node count filled in; refuses a topology the run cannot have, with one
    line naming the fix (``say``: how the user wrote a setting, ``preflight.Say``)."""
    if cfg.topology not in TOPOLOGIES:
        raise UsageError(f"{say('topology', cfg.topology)}: pick one of {', '.join(TOPOLOGIES)}")
    if cfg.topology != "replicated":
        for option, value in (("replicas", cfg.replicas), ("sentinels", cfg.sentinels)):
            if value is not None:
                raise UsageError(f"{say(option, str(value))}: replicas and Sentinels belong to a primary with "
                                 "replicas; add --topology replicated or drop this setting")
    if cfg.topology != "single" and wants_url(lease_cls):
        raise UsageError(f"--lease {cfg.lease} declares connect = \"url\" (its own client through its slot's port), "
                         f"which serves one store; use --topology single, or a lease handed the harness's clients")
    if cfg.topology == "replicated":
        return _check_replicated(cfg, lease_cls, say)
    if cfg.topology == "single":
        if cfg.nodes not in (None, 1):
            raise UsageError(f"{say('nodes', str(cfg.nodes))}: several nodes need a topology; "
                             "add --topology redlock or drop --nodes")
        return cfg
    n = node_count(cfg)
    if n < 3 or n % 2 == 0:
        raise UsageError(f"{say('nodes', str(n))}: redlock needs an odd number of masters, at least 3 "
                         "(e.g. --nodes 5)")
    _own_nodes(cfg, say, f"{n} masters", f"each of the {n} masters")
    if not needs_all_nodes(lease_cls):
        raise UsageError(f"--lease {cfg.lease} talks to one store, and --topology redlock has {n}; use a lease "
                         "that declares nodes = \"all\" (e.g. --lease redlock) or --topology single")
    return cfg.with_(nodes=n)


def _check_replicated(cfg, lease_cls, say):
    if cfg.nodes is not None:
        raise UsageError(f"{say('nodes', str(cfg.nodes))} counts redlock's masters; a replicated run has one "
                         "primary and --replicas N replicas: use --replicas or drop --nodes")
    replicas = cfg.replicas if cfg.replicas is not None else DEFAULT_REPLICAS
    if replicas < 1:
        raise UsageError(f"{say('replicas', str(replicas))}: a failover needs at least one replica (e.g. --replicas 1)")
    sentinels = cfg.sentinels if cfg.sentinels is not None else DEFAULT_SENTINELS
    if sentinels < 1 or sentinels % 2 == 0:
        raise UsageError(f"{say('sentinels', str(sentinels))}: an odd number of Sentinels, so that a majority "
                         "can authorize a failover (e.g. --sentinels 3)")
    _own_nodes(cfg, say, f"{1 + replicas} nodes and {sentinels} Sentinels", f"each of the {1 + replicas} nodes")
    if needs_all_nodes(lease_cls):
        raise UsageError(f"--lease {cfg.lease} declares nodes = \"all\", and the replicas of --topology replicated "
                         "refuse writes; use a single-endpoint lease (e.g. --lease token-cas) or --topology redlock")
    return cfg.with_(replicas=replicas, sentinels=sentinels)


def _own_nodes(cfg, say, members: str, each: str) -> None:
    """Refuse what would give a topology of several nodes one store it did not start: a store
    the run does not own, a fixed port, the one-store effect sink."""
    if cfg.backend not in ("embedded", "docker") or cfg.store_url:
        raise UsageError(f"{say('topology', cfg.topology)} starts its own {members} (--backend embedded or docker); "
                         "drop --backend compose/--store-url")
    if cfg.store_port is not None:
        raise UsageError(f"{say('store_port', str(cfg.store_port))}: {each} takes a free port; drop --store-port")
    if cfg.sink:
        raise UsageError(f"--sink writes effects to one store; drop --sink with --topology {cfg.topology}")
