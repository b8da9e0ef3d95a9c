"""A TCP fault-injection proxy that speaks Toxiproxy's (v2) HTTP API; see README.md here.

Start it as a child process with :class:`EmbeddedProxy` (or ``python -m leasecheck.harness.proxy``) and
drive it with the ``toxiproxy-python`` client, exactly as a real Toxiproxy.
"""
from leasecheck.harness.proxy.embedded import EmbeddedProxy
from leasecheck.harness.proxy.errors import ProxyStartError

__all__ = ["EmbeddedProxy", "ProxyStartError"]
