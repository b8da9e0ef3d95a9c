"""Fixtures for the ``docker`` tests (no ``__init__.py`` here: a package named ``docker`` would
shadow the docker SDK): a daemon (skipped with one line when there is none, failed
instead with ``LEASECHECK_REQUIRE_DOCKER=1``, as ``.ci/run`` sets) and the store image. The
``leasecheck`` command-line fixture is the shared one in ``tests/conftest.py``."""
from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from leasecheck.harness.stores.daemon import DEFAULT_IMAGE, DockerUnavailable, connect

REQUIRE = os.environ.get("LEASECHECK_REQUIRE_DOCKER") == "1"


def pytest_collection_modifyitems(config, items):
    for item in items:
        if Path(str(item.fspath)).is_relative_to(Path(__file__).parent):
            item.add_marker(pytest.mark.docker)


@pytest.fixture(scope="session")
def docker_client():
    try:
        return connect(timeout_s=30)
    except DockerUnavailable as e:
        if REQUIRE:
            pytest.fail(f"LEASECHECK_REQUIRE_DOCKER=1 but Docker is unavailable: {e}")
        pytest.skip(f"Docker unavailable: {str(e).split(';')[0]}")


@pytest.fixture(scope="session")
def store_image(docker_client):
    """The default store image (``.ci/run`` builds it first; building again reuses it)."""
    from leasecheck.harness.stores.image import build_image

    build_image(DEFAULT_IMAGE, log=lambda *_: None)
    return DEFAULT_IMAGE


@pytest.fixture
def run_containers(docker_client):
    """The containers labelled with a run id (none once the run is over)."""
    return lambda run_id: docker_client.containers.list(all=True, filters={"label": f"leasecheck.run={run_id}"}, ignore_removed=True)


@pytest.fixture(scope="module")
def compose_like_stack(store_image, tmp_path_factory):
    """What `docker compose up` gives, on free ports: the store in a container (this image, host
    network, 127.0.0.1) and a Toxiproxy API (the harness's Toxiproxy-compatible proxy standing in
    for ghcr.io/shopify/toxiproxy, which cannot be pulled offline). Yields (store URL, API URL)."""
    from leasecheck.harness.stores.container import DockerStore
    from leasecheck.harness.proxy.embedded import EmbeddedProxy

    d = tmp_path_factory.mktemp("stack")
    store = DockerStore(store_image, d, f"stack{os.getpid()}")
    proxy = EmbeddedProxy(d)
    store.start()
    try:
        api = proxy.start()
        yield f"redis://127.0.0.1:{store.port}/0", api
    finally:
        proxy.stop()
        store.stop()


def wait_for(predicate, timeout_s: float = 60.0):
    """``predicate()``'s first truthy answer, polled every 0.1 s; AssertionError after ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        found = predicate()
        if found:
            return found
        time.sleep(0.1)
    raise AssertionError("timed out")
