"""docker-compose.yml and --backend compose."""
import shutil
import socket
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
    assert out.count("network_mode: host") == 7            # store, toxiproxy and the replicated profile's 5
    assert "-host=127.0.0.1" in out and "ghcr.io/shopify/toxiproxy:2.12.0" in out
    assert "/toxiproxy-cli" in out and "leasecheck/redis-store:6.2" in out
    top_level = [line for line in out.splitlines() if line and not line.startswith(" ")]
    assert "volumes:" not in top_level                      # no named volumes


@needs_compose
def test_the_replicated_profile_is_a_primary_a_replica_and_three_sentinels_on_loopback():
    services = _services(_config())
    profiled = sorted(name for name, svc in services.items() if svc.get("profiles") == ["replicated"])
    assert profiled == ["primary", "replica", "sentinel-1", "sentinel-2", "sentinel-3"]
    assert "profiles" not in services["store"] and "profiles" not in services["toxiproxy"]  # `up -d` as before
    for name in profiled:
        svc = services[name]
        assert svc["network_mode"] == "host" and svc["read_only"] == "true" and svc["user"] == "65534:65534"
        assert svc["command"][svc["command"].index("--bind") + 1] == "127.0.0.1"
    assert " --replicaof 127.0.0.1 16381 " in " ".join(services["replica"]["command"])
    for i in (1, 2, 3):
        cmd = " ".join(services[f"sentinel-{i}"]["command"])
        assert cmd.startswith(f"/dev/null --sentinel --port 2638{i} --bind 127.0.0.1")
        assert "--sentinel monitor leasecheck 127.0.0.1 16381 2" in cmd
        assert "--sentinel rename-command leasecheck CLIENT EXISTS" in cmd


def _services(out: str) -> dict[str, dict]:
    """The services of `docker-compose config`'s output: each one's scalar keys (as text) and
    lists (``command``, ``profiles``), enough for these checks without a YAML parser."""
    services: dict[str, dict] = {}
    svc = key = None
    section = None
    for line in out.splitlines():
        if line and not line.startswith(" "):
            section = line.rstrip(":")
        elif section == "services" and line.startswith("  ") and not line.startswith("   "):
            svc = services.setdefault(line.strip().rstrip(":"), {})
        elif section == "services" and svc is not None and line.startswith("    ") and not line.startswith("     "):
            if line.startswith("    - "):
                svc[key].append(line[6:].strip("'"))
            else:
                key, _, value = line.strip().partition(":")
                svc[key] = value.strip().strip("'") if value.strip() else []
    return services


@needs_compose
def test_the_replicated_profile_comes_up_and_fails_over_when_its_primary_is_paused(store_image, docker_client):
    """docker-compose itself brings up the profile (only the store image is needed); pausing the
    primary makes the Sentinels promote the replica, as `--backend docker --topology replicated`'s
    failover does to its own containers."""
    ports = (16381, 16382, 26381, 26382, 26383)
    assert not any(_listening(p) for p in ports), f"something already listens on the profile's ports {ports}"
    project = f"lcrepl{int(time.time())}"
    base = [COMPOSE, "-p", project, "-f", str(ROOT / "docker-compose.yml"), "--profile", "replicated"]
    try:
        up = subprocess.run(base + ["up", "-d", "primary", "replica", "sentinel-1", "sentinel-2", "sentinel-3"],
                            capture_output=True, text=True, cwd=ROOT, timeout=120)
        assert up.returncode == 0, up.stderr
        sentinel = redis.Redis(host="127.0.0.1", port=26381, socket_timeout=2)
        _until(lambda: _sentinel_knows(sentinel, replicas=1, others=2))
        redis.Redis(host="127.0.0.1", port=16381).set("k", "v")
        _until(lambda: redis.Redis(host="127.0.0.1", port=16382).get("k") == b"v")
        paused = subprocess.run(base + ["pause", "primary"], capture_output=True, text=True, cwd=ROOT, timeout=60)
        assert paused.returncode == 0, paused.stderr
        t = time.monotonic()
        _until(lambda: int(sentinel.sentinel_get_master_addr_by_name("leasecheck")[1]) == 16382)
        assert time.monotonic() - t < 10
        assert redis.Redis(host="127.0.0.1", port=16382).execute_command("ROLE")[0] == b"master"
    finally:
        subprocess.run(base + ["down"], capture_output=True, cwd=ROOT, timeout=120)
    assert docker_client.containers.list(all=True, filters={"label": f"com.docker.compose.project={project}"}) == []
    assert not any(_listening(p) for p in ports)


def _listening(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(0.5)
        return s.connect_ex(("127.0.0.1", port)) == 0


def _sentinel_knows(sentinel, replicas: int, others: int) -> bool:
    try:
        master = sentinel.sentinel_master("leasecheck")
        return len(sentinel.sentinel_slaves("leasecheck")) == replicas and int(master["num-other-sentinels"]) == others
    except redis.RedisError:
        return False


def _until(predicate, timeout_s: float = 30.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


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
