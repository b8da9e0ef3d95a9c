"""The proxy under test runs as a child process (``python -m leasecheck.harness.proxy``), one per test
session, stopped by PID; every test talks to it through the ``toxiproxy-python`` client."""
from __future__ import annotations

import pytest
import requests

from leasecheck.harness.proxy import EmbeddedProxy

from .servers import Upstream


@pytest.fixture(scope="session")
def proxy_server(tmp_path_factory):
    proxy = EmbeddedProxy(tmp_path_factory.mktemp("proxy"))
    proxy.start()
    yield proxy
    proxy.stop()


@pytest.fixture
def tp(proxy_server):
    """A toxiproxy.Toxiproxy client; every proxy it made is deleted after the test."""
    client = proxy_server.client()
    yield client
    client.destroy_all()


@pytest.fixture
def api(proxy_server):
    """Raw HTTP to the API, for status codes and bodies: ``api("get", "/proxies")``."""
    def call(method: str, path: str, **kwargs) -> requests.Response:
        return requests.request(method, proxy_server.api_url + path, timeout=10, **kwargs)
    return call


@pytest.fixture(scope="session")
def echo_server():
    server = Upstream().start()
    yield server
    server.stop()


@pytest.fixture(scope="session")
def echo(echo_server):
    return echo_server.address


@pytest.fixture(scope="session")
def greeter():
    server = Upstream(greet=True).start()
    yield server.address
    server.stop()
