"""Client connections whose every command can be found again in the store's audit.

Each time a slot's client (re)connects, the connection announces itself with
``ECHO leasecheck:conn:<conn>`` and then numbers the commands it sends. Redis runs one
connection's commands in the order sent, so the ``seq``-th audit line from that connection's
address after the marker is the ``seq``-th command sent — even if it reaches the store after the
client gave up and reconnected. The numbers go into the history (``sent``), which is how the
checker attributes store-side effects to claim attempts without ever comparing tokens. redis-py's
handshake (``HELLO 3``, ``AUTH``, ``CLIENT SETINFO``, ``SELECT``) goes out before the marker and is
not recorded: the checker's join gives the lines a store lists of it to the connection whose
marker follows them on that address (docs/history.md, "Attribution: `sent`").

Under ``--topology replicated`` a slot's client finds the primary through the Sentinels and
follows a failover (``make_sentinel_client``): each time it connects it asks them for the primary,
and the connection is named after the node it reached (``w0.s0.c5@node2``), so the attribution
keeps working when the client switches to a new primary.

A lease that talks to several nodes gets one client per node, all on the slot's one tracker: a
connection to a node among several is named after it (``w0.s0.c3@node2``), so every ``sent``
entry says which node its command went to, and each node's audit holds only its own markers.

Commands sent after their call returned. A library may run a call's commands on threads of its
own and return before they are all sent (pottery's ``Redlock`` returns once a majority answered;
the slower masters' ``SET`` and its clean-up still go out). Drained with whatever call the slot
makes next, such a command would be credited to that call — another attempt's, when the late one
is a release's compare-and-delete — or be lost after the slot's last call. So a call is opened
with ``begin`` and closed by ``drain``: a command sent from a thread running in the context of a
closed call (``contextvars``: a thread pool whose tasks run in a copy of the caller's context, as
the pottery adapter arranges) is handed to ``on_late`` with its call instead, and the worker
writes it to the history as ``late_sent`` of that call at once. (At once, as it is numbered: a
late command the store then refuses before running it — ``OOM``, ``LOADING`` … — keeps the
number it was written with, and the checker reports the numbers that follow on that connection
as disagreements.)

The reply of a conditional create. A ``SET`` or ``SETNX`` whose reply was read gets it as a 4th
element of its entry: 1 when the store wrote the key (``OK``, or 1 for ``SETNX``), 0 when it did
not (nil, or 0). A call's result is not always its commands' replies: a lease over several nodes
returns one True/False for a ``SET NX`` on each, so only the reply says, per node, whether the
key was absent there — what the checker needs when a create runs within a millisecond of a
claim's expiry. An error, a timeout (no reply), a ``SET ... GET`` (its reply is the old value) and
a command sent after its call returned (``late_sent``: written before its reply is read) keep
three elements.
"""
from __future__ import annotations

import redis
from redis.backoff import ExponentialWithJitterBackoff
from redis.connection import Connection
from redis.exceptions import ResponseError
from redis.retry import Retry
from redis.sentinel import Sentinel, SentinelManagedConnection

from leasecheck.harness.record.numbering import Numbering, Reader, Sender, SendTracker
from leasecheck.protocol import CONN_MARKER as MARKER, SENTINEL_SERVICE


# Errors with which the store refuses a command before running it (so MONITOR does not show it):
# by the error code redis-py strips into ``status_code``, or by the text of a plain ERR.
# (Not EXECABORT: an EXEC aborted because a queued command was refused is itself listed.)
_REJECTED_CODES = frozenset({"OOM", "LOADING", "BUSY", "READONLY", "MISCONF", "NOAUTH", "NOPERM",
                             "WRONGPASS", "MASTERDOWN", "NOREPLICAS"})
_REJECTED_TEXT = ("unknown command", "wrong number of arguments", "unknown subcommand",
                  "BUSY ", "MISCONF", "NOREPLICAS")


def _rejected(e: ResponseError) -> bool:
    code = getattr(e, "status_code", None)
    return code in _REJECTED_CODES or any(t in str(e) for t in _REJECTED_TEXT)


def refused(message: str) -> bool:
    """An error reply's text (``ERR unknown command ...``, ``OOM ...``) says the store refused the
    command before running it: MONITOR does not show it (the wire path's test, on raw replies)."""
    return message.split(" ", 1)[0] in _REJECTED_CODES or any(t in message for t in _REJECTED_TEXT)


class AuditedConnection(Connection):
    """A redis-py ``Connection`` that announces itself and numbers what it sends (the numbering
    itself, per command and per reply, is ``leasecheck.harness.record.numbering.Numbering``)."""

    tracker: SendTracker  # set on the per-slot subclass made by ``make_client``
    node: str | None = None  # the node's name when the run has several (named in the marker)
    direct_port: int | None = None  # connect here, not to the port the client shows (``make_client``)
    # The numbering of the announced connection; None until its first connect (redis-py may read
    # or send before it) and from a disconnect: not numbering. A class default, so the hot path
    # reads a plain attribute instead of ``getattr(..., default)``.
    _lc: Numbering | None = None

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        if self.direct_port is not None:
            self.port = self.direct_port
        # What numbers each command and reads each reply (``Sender``, ``Reader``, compiled with the
        # hot modules) around the methods after this class's in the connection's class order.
        # Where no class before this one overrides them (all but the Sentinel's connection, whose
        # ``read_response`` turns a READONLY refusal into a disconnect), they are set on the
        # connection itself, so that redis-py's calls reach them without this class's interpreted
        # methods and their ``super()``: about 2,000-3,000 instructions per command fewer
        # (bench/RESULTS.md, "fifteenth session").
        self._send = Sender(self, super().send_command)
        self._read = Reader(self, super().read_response, _rejected)
        cls = type(self)
        if cls.send_command is AuditedConnection.send_command:
            self.send_command = self._send
        if cls.read_response is AuditedConnection.read_response:
            self.read_response = self._read

    def send_command(self, *args, **kwargs):
        return self._send(*args, **kwargs)

    def read_response(self, *args, **kwargs):
        return self._read(*args, **kwargs)

    def on_connect_check_health(self, check_health: bool = True):
        self._lc = None
        super().on_connect_check_health(check_health=check_health)
        conn = self.tracker.new_conn_id(self.node)
        super().send_command("ECHO", MARKER + conn)
        super().read_response()
        self._lc = Numbering(self.tracker, conn)     # the connection's name is its numbering's

    def disconnect(self, *args, **kwargs):
        self._lc = None
        return super().disconnect(*args, **kwargs)

    def pack_commands(self, commands):
        commands = list(commands)
        if not self.is_connected:
            self.connect()
        lc = self._lc
        if lc is not None:
            lc.pack(commands)
        return super().pack_commands(commands)


def _client_kwargs(socket_timeout: float | None, retries: int | None) -> dict:
    """redis-py's own defaults unless the run sets a client timeout or a retry count."""
    kwargs = {}
    if socket_timeout is not None:
        kwargs["socket_timeout"] = socket_timeout
        kwargs["socket_connect_timeout"] = socket_timeout
    if retries is not None:
        kwargs["retry"] = Retry(ExponentialWithJitterBackoff(base=0.01, cap=1), retries)
    return kwargs


def make_client(tracker: SendTracker, host: str, port: int, db: int = 0,
                socket_timeout: float | None = None, retries: int | None = None,
                node: str | None = None, shown_port: int | None = None) -> redis.Redis:
    """A redis-py client with the library's own defaults, on audited connections (named after
    ``node`` when the run has several). With ``shown_port`` (the slot's port on the wire path)
    the client's own address — ``connection_pool.connection_kwargs``, what a lease reads to build
    a client of another library — is that port, while its audited connections still go to
    ``port`` directly, numbered as always: so a client built from that address reaches the store
    through the wire path and is attributed too."""
    kwargs = _client_kwargs(socket_timeout, retries)
    client = redis.Redis(host=host, port=shown_port or port, db=db, **kwargs)
    cls = type("SlotConnection", (AuditedConnection,), {"tracker": tracker, "node": node,
                                                         "direct_port": port if shown_port else None})
    client.connection_pool.connection_class = cls
    return client


class FollowingConnection(SentinelManagedConnection, AuditedConnection):
    """An audited connection to whichever node the Sentinels name as primary. They answer a node's
    peer address (``leasecheck.harness.stores.replication``); ``peers`` maps its port to the node's name and the
    address the workers use, so the connection reaches the node directly and is named after it."""

    peers: dict  # peer port -> (node name, port to connect to); set on the per-slot subclass

    def connect_to(self, address):
        host, port = address
        self.node, port = self.peers.get(int(port), (None, port))
        super().connect_to((host, port))


def make_sentinel_client(tracker: SendTracker, sentinel_ports: list[int], nodes: list[dict], db: int = 0,
                         socket_timeout: float | None = None, retries: int | None = None) -> redis.Redis:
    """A client of the primary the Sentinels name (redis-py's ``Sentinel.master_for``) on audited
    connections; ``nodes``: config.json's ``store_nodes`` (name, port, client_port, peer_port)."""
    kwargs = _client_kwargs(socket_timeout, retries)
    sentinel = Sentinel([("127.0.0.1", p) for p in sentinel_ports],
                        sentinel_kwargs={"socket_timeout": 0.5, "socket_connect_timeout": 0.5}, db=db)
    client = sentinel.master_for(SENTINEL_SERVICE, db=db, **kwargs)
    peers = {int(n["peer_port"]): (n["name"], n.get("client_port") or n["port"]) for n in nodes}
    cls = type("SlotFollowingConnection", (FollowingConnection,), {"tracker": tracker, "peers": peers})
    client.connection_pool.connection_class = cls
    return client
