"""A primary, its replicas and the Redis Sentinels that fail over (``--topology replicated``).

The nodes are ordinary stores of the run's kind (``leasecheck.harness.stores.node``: embedded processes or, under
``--backend docker``, one container each), started as masters; this module makes ``node1`` the
primary and the others its replicas, and starts the Sentinels as stores of the same kind in
sentinel mode (``stores.base.ServerRole``): the same ``redis-server`` (or ``valkey-server``)
binary run as ``redis-server sentinel-K.conf --sentinel`` — a child process, or a container of the
store image named and labelled ``sentinel-K`` — with a config file it writes into the run
directory (``sentinels/``, mounted writable into a container) and a log there
(``sentinel-K.log``). They are the harness's infrastructure: not audited, never faulted, stopped
at the end like the nodes (a container of a harness that died is swept as any leftover of it).

The peer path. Every node is reached by its peers — its replicas and the Sentinels — through a
proxy of its own (one embedded Toxiproxy-compatible proxy process, one proxy per node, ``peer``
port), never directly:

- each node announces its peer address (``replica-announce-ip``/``replica-announce-port``), so
  the primary's ``INFO replication`` lists its replicas by their peer addresses;
- a replica replicates from the primary's peer address (``REPLICAOF 127.0.0.1 <peer port>``);
- the Sentinels monitor the primary at its peer address and learn the replicas from it.

So after a failover the Sentinels reconfigure every node to replicate from the new primary's peer
address, and a replica's master address is always the address the Sentinels monitor. Had the
replicas replicated through a proxy while the Sentinels watched the primary directly, the Sentinels
would see a replica "replicating from the wrong address" and repoint it (``+fix-slave-config`` in
their log, after ``failover-timeout``), silently removing the proxy from the replication link —
seen on redis-server 6.2: a replica of the proxy's port was moved to the primary's own port about
3 s after the Sentinels started. With one address per node there is nothing to fix (no
``+fix-slave-config`` in the 54 Sentinel logs of the runs that tested this module).

Cutting a node's peer proxy (``cut``: Toxiproxy ``timeout`` toxics, data dropped until removed)
isolates it from its replicas and the Sentinels while the workers, who connect directly (or
through their own proxy), still reach it: writes it acknowledges then never reach a replica.
That is how the ``failover`` fault makes a replica lag (``leasecheck.harness.faults.failover``).

The workers' client asks the Sentinels for the primary (redis-py's ``Sentinel``): they answer a
peer address, which the client maps back to the node's own address (``store_nodes`` in
config.json: ``peer_port`` per node) — the workers never go through the peer path.

The audit. On every reconfiguration a Sentinel sends the node ``CLIENT KILL TYPE normal`` (so
that clients reconnect and ask again who is primary), and a ``MONITOR`` connection is a "normal"
client: the audit would be cut at every promotion and demotion, and whatever ran before it
reconnected would be missing. So the Sentinels are told that ``CLIENT`` is called ``EXISTS`` on
these nodes (``sentinel rename-command``): their kill becomes a harmless read
(``EXISTS KILL TYPE normal``, in the audit as an unattributed line) and the audit stays whole.
The workers still move to the new primary: a stopped primary times them out, a demoted one
answers their writes with ``READONLY``, and redis-py's Sentinel client reconnects on both and asks
the Sentinels again.

Timings: ``down-after-milliseconds`` 1000 and ``failover-timeout`` 3000, so a failover takes
about 1–3 s after the primary stops answering, and another failover of the same primary is not
attempted within 6 s of the previous one (twice the failover timeout, Sentinel's rule).
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

import redis
import requests
from redis.backoff import NoBackoff
from redis.retry import Retry

from leasecheck.harness.errors import StoreError
from leasecheck.harness.run.host import free_port
from leasecheck.harness.proxy.embedded import EmbeddedProxy
from leasecheck.harness.record.own import harness_client
from leasecheck.harness.stores.base import ServerRole
from leasecheck.protocol import SENTINEL_SERVICE

SERVICE = SENTINEL_SERVICE         # the name the Sentinels know the primary by
DOWN_AFTER_MS = 1000
FAILOVER_TIMEOUT_MS = 3000
READY_TIMEOUT_S = 30.0


def _client(port: int, timeout_s: float = 1.0, store: bool = True) -> redis.Redis:
    """A connection of the harness's to a store node (marked as the harness's in its audit), or
    to a Sentinel (``store=False``: a Sentinel has no audit and knows no ``ECHO``)."""
    kwargs = dict(socket_timeout=timeout_s, socket_connect_timeout=timeout_s, retry=Retry(NoBackoff(), 0))
    if store:
        return harness_client("127.0.0.1", port, "replication", **kwargs)
    return redis.Redis(host="127.0.0.1", port=port, **kwargs)


def role(port: int, timeout_s: float = 0.5, clients: dict | None = None) -> tuple[str, int | None] | None:
    """``ROLE`` of the store at ``port``: ("master", None) or ("slave", the port it replicates
    from; negative while the link is down); None when it does not answer (stopped, down).
    ``clients``: connections to reuse, by port (else a new one for this question)."""
    c = clients.get(port) if clients is not None else None
    if c is None:
        c = _client(port, timeout_s)
        if clients is not None:
            clients[port] = c
    try:
        r = c.execute_command("ROLE")
    except redis.RedisError:
        return None
    finally:
        if clients is None:
            c.close()
    kind = r[0].decode() if isinstance(r[0], bytes) else str(r[0])
    if kind == "master":
        return ("master", None)
    link = r[3].decode() if isinstance(r[3], bytes) else str(r[3])
    return (kind, int(r[2]) if link == "connected" else -int(r[2]))


@dataclass
class Sentinel:
    """One Sentinel: its store (a process or a container) and its config file."""
    name: str          # sentinel-1, sentinel-2, ...
    conf: Path
    store: object      # a stores.base.Store started in sentinel mode

    @property
    def port(self) -> int | None:
        return self.store.port


class Replication:
    """The replicated topology around already started nodes (``nodes[0]`` becomes the primary).
    ``make_sentinel(name, log_path, role)``: a store of the nodes' kind, not started, that will run
    as ``role`` (``kinds.store_for`` with the run's configuration)."""

    def __init__(self, nodes, run_dir: Path, sentinels: int, make_sentinel):
        self.nodes = list(nodes)
        self.run_dir = Path(run_dir).resolve()
        self.make_sentinel = make_sentinel
        self.count = sentinels
        self.proxy: EmbeddedProxy | None = None
        self.api_url = ""
        self.peer_ports: dict[str, int] = {}      # node name -> its peer proxy's port
        self.sentinels: list[Sentinel] = []

    # -- start ------------------------------------------------------------------------------
    def start(self) -> None:
        self.proxy = EmbeddedProxy(self.run_dir / "proxy-peers.log")
        self.api_url = self.proxy.start()
        for node in self.nodes:
            port = free_port()
            r = requests.post(f"{self.api_url}/proxies", json={
                "name": self.proxy_name(node.name), "listen": f"127.0.0.1:{port}",
                "upstream": f"127.0.0.1:{node.store.port}"}, timeout=5)
            if r.status_code >= 300:
                raise StoreError(f"could not create the peer proxy of {node.name}: {r.status_code} {r.text[:200]}")
            self.peer_ports[node.name] = port
        primary = self.nodes[0]
        for node in self.nodes:
            with _client(node.store.port, 5.0) as c:
                for k, v in (("replica-announce-ip", "127.0.0.1"),
                             ("replica-announce-port", str(self.peer_ports[node.name])),
                             ("repl-diskless-sync", "yes"), ("repl-diskless-sync-delay", "0"),
                             ("repl-diskless-load", "swapdb")):
                    c.config_set(k, v)
                if node is not primary:
                    c.execute_command("REPLICAOF", "127.0.0.1", self.peer_ports[primary.name])
        self._wait(self._replicas_linked, "the replicas did not finish their first sync with the primary")
        sdir = self.run_dir / "sentinels"
        sdir.mkdir(exist_ok=True)
        for i in range(1, self.count + 1):
            name = f"sentinel-{i}"
            conf = sdir / f"{name}.conf"
            conf.write_text(self._conf(self.peer_ports[primary.name]))
            s = Sentinel(name, conf, self.make_sentinel(name, self.run_dir / f"{name}.log",
                                                        ServerRole(sentinel_conf=conf)))
            self.sentinels.append(s)     # before it starts: one that half-started is stopped too
            s.store.start()
        self._wait(self._sentinels_ready, "the Sentinels did not learn every replica and each other "
                                          f"(see {self.run_dir}/sentinel-*.log)")

    def _conf(self, primary_peer: int) -> str:
        """The Sentinel's own lines; its port, address, log and folder come from its store's
        command line, as every node's do."""
        quorum = self.count // 2 + 1
        return "\n".join([
            f"sentinel monitor {SERVICE} 127.0.0.1 {primary_peer} {quorum}",
            f"sentinel down-after-milliseconds {SERVICE} {DOWN_AFTER_MS}",
            f"sentinel failover-timeout {SERVICE} {FAILOVER_TIMEOUT_MS}",
            f"sentinel parallel-syncs {SERVICE} 1",
            # Their CLIENT KILL TYPE normal would close the audit's MONITOR connection (see above).
            f"sentinel rename-command {SERVICE} CLIENT EXISTS", ""])

    def _wait(self, ready, what: str) -> None:
        deadline = time.monotonic() + READY_TIMEOUT_S
        while time.monotonic() < deadline:
            if ready():
                return
            time.sleep(0.05)
        raise StoreError(what)

    def _replicas_linked(self) -> bool:
        want = self.peer_ports[self.nodes[0].name]
        return all(role(n.store.port) == ("slave", want) for n in self.nodes[1:])

    def _sentinels_ready(self) -> bool:
        """Every Sentinel knows every replica and every other Sentinel: before that, a failover
        could find no replica to promote (a Sentinel asks the primary for its replicas every 10 s)."""
        for s in self.sentinels:
            try:
                with _client(s.port, store=False) as c:
                    master = c.sentinel_master(SERVICE)
                    replicas = c.sentinel_slaves(SERVICE)
            except redis.RedisError:
                return False
            if int(master.get("num-other-sentinels", 0)) != self.count - 1 or len(replicas) != len(self.nodes) - 1:
                return False
        return True

    # -- during the run ---------------------------------------------------------------------
    def proxy_name(self, node: str) -> str:
        return f"peer-{node}"

    def node_at_peer(self, port: int):
        return next((n for n in self.nodes if self.peer_ports.get(n.name) == port), None)

    def sentinel_primary(self, clients: dict | None = None):
        """The node the Sentinels name as primary now (the first that answers), or None.
        ``clients``: connections to the Sentinels to reuse, by port."""
        for s in self.sentinels:
            c = clients.get(s.port) if clients is not None else None
            if c is None:
                c = _client(s.port, 0.5, store=False)
                if clients is not None:
                    clients[s.port] = c
            try:
                addr = c.sentinel_get_master_addr_by_name(SERVICE)
            except redis.RedisError:
                continue
            finally:
                if clients is None:
                    c.close()
            if addr:
                return self.node_at_peer(int(addr[1]))
        return None

    def primary(self):
        """The node that is primary at this moment: the one the Sentinels name, else the first
        node that answers ``ROLE`` as master."""
        node = self.sentinel_primary()
        if node is not None:
            return node
        return next((n for n in self.nodes if (role(n.store.port) or ("",))[0] == "master"), self.nodes[0])

    def replicas(self) -> list:
        p = self.primary()
        return [n for n in self.nodes if n is not p]

    def stop(self) -> None:
        """Stop the Sentinels (first: none may fail over while the nodes go), then the peer proxy."""
        for s in self.sentinels:
            s.store.stop()
        if self.proxy is not None:
            self.proxy.stop()
            self.proxy = None

    def describe(self) -> dict:
        """For config.json."""
        return {"sentinel_ports": [s.port for s in self.sentinels], "peer_ports": dict(self.peer_ports)}
