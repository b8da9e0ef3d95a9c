"""A one-way partition on the workers' path to the store: one direction of every connection is
cut, the other still flows.

- ``oneway:replies`` (the default): the workers' commands reach the store and run there, but no
  answer comes back — an acquire that *succeeded* looks to its client like a timeout, the very
  case where a client believes it holds nothing while the store says it holds the claim.
- ``oneway:requests``: the commands never reach the store; the answers of what was already
  running still come back.

Both are a ``timeout`` toxic with timeout 0 on one stream (data dropped until the toxic is
removed; removing it closes the connections it sat on, as Toxiproxy does), written to the ledger
as a ``toxic`` entry before it is added.

Measured while it acts: a probe connection through the proxy sends ``SET`` of a probe key (outside
the run's key space, expiring by itself) and waits 0.5 s for the answer; the admin connection, which
bypasses the proxy, then looks for the key. ``probe_answered`` and ``probe_applied`` tell which
direction was cut; the fault judges itself (``took_effect``, ``why``) from them.
"""
from __future__ import annotations

import socket
import time

import redis

from leasecheck.harness.faults.base import Active, FaultContext, Step
from leasecheck.harness.faults.network import _ProxyFault
from leasecheck.harness.record.own import marker_command
from leasecheck.protocol import HARNESS_MARKER

# The probe's connection marks itself as the harness's first; the store echoes the marker back.
_MARKER = (HARNESS_MARKER + "probe").encode()
_ANSWER = b"$%d\r\n%s\r\n+OK" % (len(_MARKER), _MARKER)

STREAMS = {"replies": "downstream", "requests": "upstream"}


class OneWay(_ProxyFault):
    name = "oneway"
    order = 45
    summary = "cut one direction of the workers' path: replies (commands still run) or requests"
    targets = ("replies", "requests")
    default_target = "replies"
    measures = ("stream", "probe_answered", "probe_applied", "took_effect", "why", "held_s")

    def start(self, ctx: FaultContext, step: Step) -> Active:
        stream = STREAMS[step.target]
        ident = self._add(ctx, step, f"lc-oneway-{stream}-{id(step)}", "timeout", stream, {"timeout": 0})
        key = f"leasecheck-probe:{ctx.cfg.run_id}:oneway:{id(step)}"
        active = Active(step, [ident])  # in place now: its duration runs from here, not after the probe
        answered, applied = _probe(ctx.node_of(step), key)
        active.data.update(stream=stream, answered=answered, applied=applied)
        return active

    def stop(self, ctx: FaultContext, active: Active) -> dict:
        for ident in active.ledger_ids:
            ctx.ledger.heal(ident)
        answered, applied = active.data["answered"], active.data["applied"]
        took, why = judge(active.step.target, answered, applied)
        return {"stream": active.data["stream"], "probe_answered": answered, "probe_applied": applied,
                "took_effect": took, "why": why, "held_s": round(time.monotonic() - active.started, 4)}


def judge(target: str, answered: bool, applied: bool | None) -> tuple[bool | None, str]:
    """Did the cut hold in the direction asked? ``replies``: the probe ran but got no answer;
    ``requests``: the probe neither ran nor got an answer."""
    if answered:
        return False, "a probe through the proxy got its answer during the cut"
    if applied is None:
        return None, "the store could not be asked whether the probe ran"
    if target == "replies":
        return (True, "a probe's SET ran on the store and its answer never came back") if applied else \
            (False, "a probe's SET never reached the store (the requests were cut, not the replies)")
    return (True, "a probe's SET never reached the store") if not applied else \
        (False, "a probe's SET ran on the store (the requests got through)")


def _answered(sock: socket.socket) -> bool:
    """Whether the ``SET``'s ``+OK`` came back, after the reply to the connection's marker."""
    buf = b""
    while len(buf) < len(_ANSWER):
        data = sock.recv(256)
        if not data:
            return False
        buf += data
    return buf.startswith(_ANSWER)


def _probe(node, key: str) -> tuple[bool, bool | None]:
    """(answered through the proxy, applied on the store) for one ``SET key 1 PX 10000``, sent
    on a bare socket: a client library's handshake (``HELLO``, ``CLIENT SETINFO``) would wait for
    its own answer first and never send the probe."""
    command = [b"SET", key.encode(), b"1", b"PX", b"10000"]   # after the harness's marker
    wire = marker_command("probe") + b"*%d\r\n" % len(command) + b"".join(b"$%d\r\n%s\r\n" % (len(a), a) for a in command)
    try:
        with socket.create_connection(("127.0.0.1", node.proxy.listen_port), timeout=0.5) as sock:
            sock.sendall(wire)
            answered = _answered(sock)
    except OSError:   # a timeout: no answer
        answered = False
    try:
        time.sleep(0.05)   # a command that got through is run by now
        applied = bool(node.admin.exists(key))
        node.admin.delete(key)
    except redis.RedisError:
        applied = None
    return answered, applied
