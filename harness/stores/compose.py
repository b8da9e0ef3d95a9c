"""The ``compose`` backend: the stack of ``docker-compose.yml`` (the store and Toxiproxy), brought
up beforehand with ``docker compose up -d`` (or ``docker-compose up -d``).

The harness treats its store like ``--store-url`` (only the run's own keys are touched, nothing
is flushed, the store's process is never faulted) and drives the stack's Toxiproxy for the
workers' path, as with ``--toxiproxy-url``. Both addresses default to the compose file's and
may be given by flag or environment (``LEASECHECK_STORE_URL``, ``LEASECHECK_TOXIPROXY_URL``);
they must be on loopback.
"""
from __future__ import annotations

from urllib.parse import urlparse

import redis
import requests
from redis.backoff import NoBackoff
from redis.retry import Retry

from leasecheck.harness.errors import UsageError
from leasecheck.harness.stores.external import ExternalStore

COMPOSE_STORE_URL = "redis://127.0.0.1:16379/0"
COMPOSE_TOXIPROXY_URL = "http://127.0.0.1:8474"
UP_HINT = "bring it up first: `docker compose up -d` (or `docker-compose up -d`) in the repository root"
LOOPBACK = ("127.0.0.1", "localhost", "::1")


def compose_defaults(cfg) -> dict:
    """The stack's addresses (``store_url``, ``toxiproxy_url``: the flags' or the compose file's),
    checked to answer (one line naming the fix if not)."""
    if cfg.store_bin or cfg.store_port:
        raise UsageError("--backend compose uses the stack's store; drop --store-bin/--store-port "
                         "(give --store-url if the stack's store is not at the default address)")
    filled = {"store_url": cfg.store_url or COMPOSE_STORE_URL,
              "toxiproxy_url": cfg.toxiproxy_url or COMPOSE_TOXIPROXY_URL}
    for flag, url in (("--store-url", filled["store_url"]), ("--toxiproxy-url", filled["toxiproxy_url"])):
        host = urlparse(url).hostname
        if host and host not in LOOPBACK:
            raise UsageError(f"{flag} {url}: the compose stack listens on 127.0.0.1 only; "
                             "use a 127.0.0.1 address (never a container IP)")
    store_up(filled["store_url"])
    toxiproxy_up(filled["toxiproxy_url"])
    return filled


def store_up(url: str) -> None:
    u = urlparse(url)
    if u.scheme != "redis" or not u.hostname:
        raise UsageError(f"--store-url {url}: write redis://HOST:PORT/DB, e.g. {COMPOSE_STORE_URL}")
    try:
        redis.Redis(host=u.hostname, port=u.port or 6379, socket_timeout=2, socket_connect_timeout=2,
                    retry=Retry(NoBackoff(), 0)).ping()
    except redis.RedisError as e:
        raise UsageError(f"--backend compose: the stack's store at {url} does not answer "
                         f"({type(e).__name__}); {UP_HINT}") from None


def toxiproxy_up(url: str) -> None:
    try:
        requests.get(f"{url.rstrip('/')}/version", timeout=2).raise_for_status()
    except requests.RequestException as e:
        raise UsageError(f"--backend compose: the stack's Toxiproxy at {url} does not answer "
                         f"({type(e).__name__}); {UP_HINT}") from None


class ComposeStore(ExternalStore):
    """The compose stack's store: external to the harness (never faulted), only the stack's."""

    kind = "compose"

    def _not_answering(self, e: Exception) -> str:
        return f"--backend compose: the stack's store at {self.address} does not answer ({e}); {UP_HINT}"
