"""The proxy as a process: ``python -m leasecheck.harness.proxy`` and the EmbeddedProxy wrapper."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest
import requests

from leasecheck.harness.proxy import EmbeddedProxy, ProxyStartError


def test_embedded_start_stop(tmp_path):
    proxy = EmbeddedProxy(tmp_path)
    url = proxy.start()
    assert url == f"http://127.0.0.1:{proxy.port}" and proxy.port > 0
    pid = proxy.pid
    assert requests.get(url + "/version", timeout=5).status_code == 200
    proxy.stop()
    assert proxy.proc.returncode == 0
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)
    assert "API listening" in (tmp_path / "proxy.log").read_text()


def test_embedded_log_file_and_context_manager(tmp_path):
    log = tmp_path / "sub" / "p.log"
    with EmbeddedProxy(log) as proxy:
        assert proxy.client().proxies() == {}
    assert log.exists() and not proxy.running


def test_embedded_refuses_other_hosts(tmp_path):
    with pytest.raises(ProxyStartError, match="127.0.0.1 only"):
        EmbeddedProxy(tmp_path, host="0.0.0.0").start()


def test_module_refuses_other_hosts():
    out = subprocess.run([sys.executable, "-m", "leasecheck.harness.proxy", "--host", "192.0.2.1",
                          "--port", "0"], capture_output=True, text=True, timeout=30)
    assert out.returncode == 2 and "127.0.0.1 only" in out.stderr and out.stdout == ""


def test_exits_when_parent_pipe_closes(tmp_path):
    proxy = EmbeddedProxy(tmp_path)
    proxy.start()
    proxy.proc.stdin.close()           # what the parent dying does
    assert proxy.proc.wait(10) == 0
    proxy.stop()


def test_config_file_populates(tmp_path, echo):
    config = tmp_path / "proxies.json"
    config.write_text('[{"name": "cfg", "upstream": "%s", "listen": "127.0.0.1:0"}]' % echo)
    with EmbeddedProxy(tmp_path, config=config) as proxy:
        assert set(proxy.client().proxies()) == {"cfg"}
