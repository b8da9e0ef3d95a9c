"""docker-compose.yml and --backend compose."""
import shutil
import subprocess
import time
from pathlib import Path

import pytest
import redis

ROOT = Path(__file__).resolve().parents[2]
COMPOSE = shutil.which("docker-compose")
needs_compose = pytest.mark.skipif(COMPOSE is None, reason="docker-compose (1.29) not installed")


def _config() -> str:
    p = subprocess.run([COMPOSE, "-f", str(ROOT / "docker-compose.yml"), "config"], capture_output=True,
                       text=True, cwd=ROOT, timeout=60)
    assert p.returncode == 0, p.stderr
    return p.stdout


@needs_compose
def test_compose_file_is_valid_and_loopback_only():
    out = _config()
    assert "0.0.0.0" not in out and "ports:" not in out and "privileged" not in out
    assert out.count("network_mode: host") == 2
    assert "-host=127.0.0.1" in out and "ghcr.io/shopify/toxiproxy:2.12.0" in out
    assert "/toxiproxy-cli" in out and "leasecheck/redis-store:6.2" in out
    top_level = [line for line in out.splitlines() if line and not line.startswith(" ")]
    assert "volumes:" not in top_level                      # no named volumes


@needs_compose
def test_store_image_is_overridable_by_env():
    p = subprocess.run([COMPOSE, "-f", str(ROOT / "docker-compose.yml"), "config"], capture_output=True,
                       text=True, cwd=ROOT, env={"PATH": "/usr/bin:/bin", "LEASECHECK_STORE_IMAGE": "my/redis:1"})
    assert p.returncode == 0 and "image: my/redis:1" in p.stdout


@needs_compose
def test_compose_store_service_comes_up_healthy(store_image, docker_client):
    """The store service of the file, brought up by docker-compose itself (Toxiproxy's image cannot
    be pulled offline, so only this service)."""
    project = f"lctest{int(time.time())}"
    base = [COMPOSE, "-p", project, "-f", str(ROOT / "docker-compose.yml")]
    try:
        up = subprocess.run(base + ["up", "-d", "store"], capture_output=True, text=True, cwd=ROOT, timeout=120)
        assert up.returncode == 0, up.stderr
        c = docker_client.containers.list(filters={"label": f"com.docker.compose.project={project}"})[0]
        deadline = time.monotonic() + 60
        while c.attrs["State"].get("Health", {}).get("Status") != "healthy" and time.monotonic() < deadline:
            time.sleep(0.5)
            c.reload()
        assert c.attrs["State"]["Health"]["Status"] == "healthy"
        assert redis.Redis(host="127.0.0.1", port=16379).config_get("bind") == {"bind": "127.0.0.1"}
    finally:
        subprocess.run(base + ["down"], capture_output=True, cwd=ROOT, timeout=120)


def test_run_against_an_up_stack(leasecheck, compose_like_stack):
    store_url, api = compose_like_stack
    r = leasecheck("run", "--backend", "compose", "--store-url", store_url, "--toxiproxy-url", api,
                   "--lease", "token-cas", "--nemesis", "latency,pause:holder", "--nemesis-interval", "2s",
                   "--time-limit", "5", "--workers", "3", "--seed", "4")
    assert r.code == 0, r.out + r.err
    cfg = (r.run_dir / "config.json").read_text()
    assert '"backend": "compose"' in cfg
    assert {f["fault"] for f in r.results["faults"]} <= {"latency", "pause"} and r.results["faults"]
    # The stack's store is still up: the stack is not the harness's to stop.
    port = int(store_url.rsplit(":", 1)[1].split("/")[0])
    assert redis.Redis(host="127.0.0.1", port=port).ping()
