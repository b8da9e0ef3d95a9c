"""The workers' way to the store when network faults or a store restart are planned: a Toxiproxy
proxy in between — our embedded one (``leasecheck.harness.proxy``) or a real Toxiproxy server
(``--toxiproxy-url``), both driven through the same HTTP API with ``toxiproxy-python``. The
audit and admin connections bypass it."""
from __future__ import annotations

from pathlib import Path
from urllib.parse import urlparse

import requests
from toxiproxy import Toxiproxy
from toxiproxy.api import APIConsumer

from leasecheck.harness.errors import StoreError, UsageError
from leasecheck.harness.run.host import free_port
from leasecheck.harness.proxy.embedded import EmbeddedProxy


def check_toxiproxy_url(url: str) -> None:
    """One line naming the fix when a Toxiproxy URL does not answer (before anything starts)."""
    u = urlparse(url)
    if u.scheme != "http" or not u.hostname:
        raise UsageError(f"--toxiproxy-url {url}: write http://HOST:PORT, e.g. http://127.0.0.1:8474")
    try:
        requests.get(f"{url.rstrip('/')}/version", timeout=3).raise_for_status()
    except requests.RequestException as e:
        raise UsageError(f"--toxiproxy-url {url} does not answer ({type(e).__name__}); start Toxiproxy "
                         "there or drop the option to use the embedded proxy") from None


class ProxyPath:
    """One proxy between the workers and one store node (``name``: the node's proxy name,
    ``leasecheck-<run id>`` by default)."""

    def __init__(self, run_dir: Path, run_id: str, upstream_port: int, toxiproxy_url: str | None = None,
                 name: str | None = None):
        self.run_dir, self.upstream_port = Path(run_dir), upstream_port
        self.name = name or f"leasecheck-{run_id}"
        self.toxiproxy_url = toxiproxy_url
        self.embedded = None
        self.api_url = ""
        self.listen_port = 0

    def start(self) -> None:
        if self.toxiproxy_url:
            self.api_url = self.toxiproxy_url.rstrip("/")
        else:
            self.embedded = EmbeddedProxy(self.run_dir)
            self.api_url = self.embedded.start()
        u = urlparse(self.api_url)
        APIConsumer.host, APIConsumer.port = u.hostname, u.port
        for attempt in range(3):    # a free port may be taken before the proxy binds it (runs at once)
            self.listen_port = free_port()
            try:
                Toxiproxy().create(upstream=f"127.0.0.1:{self.upstream_port}", name=self.name,
                                   listen=f"127.0.0.1:{self.listen_port}")
                return
            except Exception as e:
                if attempt < 2 and "address already in use" in str(e).lower():
                    continue
                self.stop()
                raise StoreError(f"could not create the proxy {self.name} at {self.api_url}: {e}") from None

    def add_toxic(self, name: str, type_: str, stream: str, attributes: dict) -> None:
        """Add a toxic to this node's proxy. Plain HTTP to this proxy's own API address: faults
        on several nodes start at once from their own threads, and toxiproxy-python's client
        keeps one address for the whole process."""
        self._post(f"/proxies/{self.name}/toxics", {"name": name, "type": type_, "stream": stream,
                                                      "toxicity": 1.0, "attributes": attributes})

    def set_enabled(self, enabled: bool) -> None:
        """Let the workers through this proxy, or refuse them (a disabled proxy closes its links)."""
        self._post(f"/proxies/{self.name}", {"enabled": enabled})

    def _post(self, path: str, body: dict) -> None:
        r = requests.post(f"{self.api_url}{path}", json=body, timeout=5)
        if r.status_code >= 300:
            raise StoreError(f"the proxy {self.name} at {self.api_url} refused {path}: {r.status_code} {r.text[:200]}")

    def stop(self) -> None:
        if self.toxiproxy_url:
            try:
                p = Toxiproxy().get_proxy(self.name)
                if p is not None:
                    Toxiproxy().destroy(p)
            except Exception:
                pass
        if self.embedded is not None:
            self.embedded.stop()
            self.embedded = None

    @property
    def pid(self) -> int | None:
        return self.embedded.pid if self.embedded else None
