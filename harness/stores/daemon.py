"""The Docker daemon, as the ``docker`` store kind and the image builder reach it: a client whose
daemon answered, the labels every container of the harness carries, the default image.
"""
from __future__ import annotations

import os

from leasecheck.harness.errors import LeasecheckError
from leasecheck.harness.run.host import proc_started

DEFAULT_IMAGE = "leasecheck/redis-store:6.2"
LABEL = "leasecheck"                    # every container the harness creates: leasecheck=1
RUN_LABEL = "leasecheck.run"            # ... and the run id
OWNER_LABELS = ("leasecheck.owner-pid", "leasecheck.owner-started")
RUN_DIR_LABEL = "leasecheck.run-dir"
NODE_LABEL = "leasecheck.node"          # the store node it is (node1, node2, ...): one container each
LOG_LABEL = "leasecheck.log"            # where its output goes (that node's store log)
DOCKERD_HINT = "start one (e.g. `dockerd --bridge=none --iptables=false &`) or use --backend embedded"


def owner_labels() -> dict[str, str]:
    """The labels naming this process as a container's owner: ``remove_leftovers`` in another
    harness (a parallel run) leaves the container alone while this process lives."""
    return {OWNER_LABELS[0]: str(os.getpid()), OWNER_LABELS[1]: str(proc_started(os.getpid()))}


class DockerUnavailable(LeasecheckError):
    """No Docker daemon answers, or the docker SDK is missing."""


def connect(timeout_s: float = 30.0):
    """A docker SDK client whose daemon answered a ping; ``DockerUnavailable`` (one line) if not."""
    try:
        import docker
    except ImportError:
        raise DockerUnavailable("the docker SDK is not installed: pip install 'docker>=7.0'") from None
    where = os.environ.get("DOCKER_HOST") or "unix:///var/run/docker.sock"
    try:
        client = docker.from_env(timeout=timeout_s)
        client.ping()
    except Exception as e:  # DockerException, requests' ConnectionError, ...
        reason = " ".join(str(e).split())[:120] or type(e).__name__
        raise DockerUnavailable(f"no Docker daemon answers at {where} ({reason}); {DOCKERD_HINT}") from None
    return client


def daemon_maybe_present() -> bool:
    """Cheap test before a cleanup tries to talk to a daemon at all."""
    host = os.environ.get("DOCKER_HOST")
    if host:
        return True
    return os.path.exists("/var/run/docker.sock")
