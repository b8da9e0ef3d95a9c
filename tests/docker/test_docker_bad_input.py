"""Bad input of the container backends: one line naming the fix, exit 64, nothing started."""
import socket
import time

import pytest

from leasecheck.harness.stores.daemon import DEFAULT_IMAGE
from leasecheck.harness.stores.image import ldd, rootfs_tar


def _one_line_usage(r, tmp_path, *words):
    assert r.code == 64, r.out + r.err
    assert len(r.err.strip().splitlines()) == 1, r.err
    assert "Traceback" not in r.err
    for w in words:
        assert w in r.err, r.err
    assert not (tmp_path / "results").exists()


def test_no_docker_daemon(leasecheck, tmp_path):
    # Needs no daemon at all: this one runs everywhere.
    r = leasecheck("run", "--backend", "docker", env={"DOCKER_HOST": "unix:///nonexistent/docker.sock"})
    _one_line_usage(r, tmp_path, "no Docker daemon answers", "dockerd", "--backend embedded")


def test_image_build_without_daemon(leasecheck, tmp_path):
    r = leasecheck("image", "build", env={"DOCKER_HOST": "unix:///nonexistent/docker.sock"})
    assert r.code == 64 and "no Docker daemon answers" in r.err and len(r.err.strip().splitlines()) == 1


def test_missing_image(leasecheck, tmp_path, docker_client):
    r = leasecheck("run", "--backend", "docker", "--store-image", "leasecheck/no-such-image:0")
    _one_line_usage(r, tmp_path, "no such image", "leasecheck image build")


def test_taken_port(leasecheck, tmp_path, store_image):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        r = leasecheck("run", "--backend", "docker", "--store-port", str(port))
    _one_line_usage(r, tmp_path, f"--store-port {port} is already in use")


def test_compose_stack_not_up(leasecheck, tmp_path):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]       # bound, never listening: refused
        r = leasecheck("run", "--backend", "compose", "--store-url", f"redis://127.0.0.1:{port}/0")
    _one_line_usage(r, tmp_path, "compose", "does not answer", "docker compose up -d")


@pytest.mark.parametrize("args,words", [
    (["--backend", "docker", "--store-bin", "/bin/true"], ["--store-image"]),
    (["--store-image", DEFAULT_IMAGE], ["--backend docker"]),
    (["--backend", "podman"], ["--backend"]),
])
def test_mixed_flags(leasecheck, tmp_path, args, words, store_image):
    r = leasecheck("run", *args)
    _one_line_usage(r, tmp_path, *words)


@pytest.fixture(scope="module")
def jemalloc_image(docker_client, tmp_path_factory):
    """An image whose redis-server says it is a jemalloc build (a shell script standing in)."""
    d = tmp_path_factory.mktemp("fake")
    script = d / "redis-server"
    script.write_text("#!/bin/sh\necho 'Redis server v=7.0.15 sha=00000000:0 malloc=jemalloc-5.3.0 bits=64'\n")
    files = {"/bin/sh": "/bin/sh", **{lib: lib for lib in ldd("/bin/sh")}}
    files["/usr/local/bin/redis-server"] = str(script)
    tag = f"leasecheck-test/jemalloc:{time.monotonic_ns()}"
    docker_client.api.import_image_from_data(rootfs_tar(files), repository=tag.split(":")[0], tag=tag.split(":")[1],
                                             changes=["ENV PATH=/usr/local/bin:/bin", 'ENTRYPOINT ["redis-server"]'])
    yield tag
    docker_client.images.remove(tag, force=True)


def test_jemalloc_image_refuses_store_clock(leasecheck, tmp_path, jemalloc_image):
    r = leasecheck("run", "--backend", "docker", "--store-image", jemalloc_image, "--nemesis", "clock:store")
    _one_line_usage(r, tmp_path, "malloc=jemalloc", jemalloc_image, f"--store-image {DEFAULT_IMAGE}")
    # Other faults are fine with that image (validation passes; we stop before running).
    from leasecheck.harness.settings.config import RunConfig
    from leasecheck.harness.run.preflight import validate

    validate(RunConfig(backend="docker", store_image=jemalloc_image, nemesis="pause:store,kill"))


@pytest.mark.parametrize("fault", ["pause:store", "kill", "clock:store", "evict"])
def test_compose_refuses_store_process_faults(leasecheck, tmp_path, fault, compose_like_stack):
    store_url, toxiproxy_url = compose_like_stack
    r = leasecheck("run", "--backend", "compose", "--store-url", store_url, "--toxiproxy-url", toxiproxy_url,
                   "--nemesis", fault)
    _one_line_usage(r, tmp_path, "--backend compose", "--backend docker")
