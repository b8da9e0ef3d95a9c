"""The harness's own connections to a store, marked as the harness's in the audit.

The checker gives the lines from one store address to the connection whose marker came last from
it (``leasecheck.harness.record.connection``). The operating system hands a closed connection's
client port to the next one it opens, so a connection of the harness — a fault's probe through the
proxy, the admin connection, the nemesis's markers, an eviction's fillers — may get the port a
worker's connection just gave up. Its commands would then look like that worker connection's,
numbered past its last call: an orphan, "in no sent list". So every harness connection that talks
to a store while its audit records sends ``ECHO leasecheck:harness:<role>`` first (right after
redis-py's handshake, as a worker connection sends its own marker): the checker frees the address
there, and the lines that follow are the harness's (docs/history.md, "Attribution: `sent`").

Sentinels are not stores (no audit, and no ``ECHO``): their clients stay plain.
"""
from __future__ import annotations

import redis
from redis.connection import Connection

from leasecheck.protocol import HARNESS_MARKER


def marker_command(role: str) -> bytes:
    """The marker as RESP, for a probe that writes its command on a bare socket."""
    text = (HARNESS_MARKER + role).encode()
    return b"*2\r\n$4\r\nECHO\r\n$%d\r\n%s\r\n" % (len(text), text)


class HarnessConnection(Connection):
    """A redis-py connection that announces itself as the harness's each time it connects."""

    role = "admin"   # set on the subclass ``harness_client`` makes

    def on_connect_check_health(self, check_health: bool = True):
        super().on_connect_check_health(check_health=check_health)
        super().send_command("ECHO", HARNESS_MARKER + self.role, check_health=False)
        super().read_response()


def harness_client(host: str, port: int, role: str, **kwargs) -> redis.Redis:
    """``redis.Redis(host, port, **kwargs)`` on connections marked ``leasecheck:harness:<role>``."""
    client = redis.Redis(host=host, port=port, **kwargs)
    client.connection_pool.connection_class = type(
        "HarnessConnection", (HarnessConnection,), {"role": role})
    return client
