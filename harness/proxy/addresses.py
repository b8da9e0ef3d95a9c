"""Parsing of ``host:port`` strings, and the loopback-only rule for everything we listen on."""
from __future__ import annotations

from leasecheck.harness.proxy.errors import bad_request

LOOPBACK = "127.0.0.1"
# Host names we accept for a listener; each binds 127.0.0.1 (never ::1 or another address).
_LOOPBACK_NAMES = {"127.0.0.1", "localhost"}


class NotLoopbackError(ValueError):
    """A listener was asked to bind something other than 127.0.0.1."""


def split_host_port(text: str) -> tuple[str, int]:
    """``"h:p"`` or ``"[v6]:p"`` -> ``(host, port)``; ``ValueError`` when malformed."""
    if not isinstance(text, str) or ":" not in text:
        raise ValueError(f"address {text!r} is not of the form host:port")
    host, _, port_text = text.rpartition(":")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    try:
        port = int(port_text)
    except ValueError:
        raise ValueError(f"address {text!r}: port {port_text!r} is not a number") from None
    if not 0 <= port <= 65535:
        raise ValueError(f"address {text!r}: port {port} is out of range")
    return host, port


def loopback_listen(text: str | None) -> tuple[str, int]:
    """Where a listener may bind: ``(127.0.0.1, port)``.

    An empty or missing address means ``127.0.0.1:0`` (Toxiproxy would listen on every
    interface; we never do). Any host other than 127.0.0.1 / localhost is refused.
    """
    if text is None or text == "":
        return LOOPBACK, 0
    host, port = split_host_port(text)
    if host not in _LOOPBACK_NAMES:
        raise NotLoopbackError(
            f"refusing to listen on {text!r}: this proxy binds 127.0.0.1 only "
            f"(use 127.0.0.1:PORT, localhost:PORT or 127.0.0.1:0 for a free port)")
    return LOOPBACK, port


def parse_listen_or_400(text: str | None) -> tuple[str, int]:
    try:
        return loopback_listen(text)
    except ValueError as exc:  # NotLoopbackError included
        raise bad_request(f"bad listen address: {exc}") from None


def parse_upstream_or_400(text: str) -> tuple[str, int]:
    try:
        host, port = split_host_port(text)
    except ValueError as exc:
        raise bad_request(f"bad upstream address: {exc}") from None
    if not host or port == 0:
        raise bad_request(f"bad upstream address: {text!r} needs a host and a non-zero port")
    return host, port
