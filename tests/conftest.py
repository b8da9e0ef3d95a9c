"""Shared fixtures: an embedded redis-server per test module, started and stopped by PID."""
from __future__ import annotations

import pytest

from harness.config import default_store_bin
from harness.store import EmbeddedStore


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    s = EmbeddedStore(default_store_bin(), tmp_path_factory.mktemp("store"))
    s.start()
    yield s
    s.stop()
