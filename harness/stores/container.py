"""The ``docker`` backend: each store node in a container the harness creates, faults and removes.

A container runs ``redis-server`` from the store image in the host's network namespace
(``network_mode="host"``), bound to 127.0.0.1 on a free port, with no RDB/AOF, a read-only root,
every capability dropped, ``no-new-privileges`` and the harness's own uid. A run of several nodes
has one container per node, ``leasecheck-store-<run id>-<node>``, each on its own port. Its labels
(``leasecheck=1``, the run id, the node's name, the node's log file, the harness's PID and start
time, the run directory) let ``leasecheck cleanup`` and the next run find a container whose
harness was killed outright, and put its output in that node's log.

Faults act on one node's container alone: ``pause()``/``resume()`` use the cgroup freezer
(``docker pause``); ``kill()`` sends SIGKILL and ``restart()`` starts the same container again
(same command, same port, empty); the node's clock follows its own timestamp file
(``run_dir/faketime/store-node3``) through a read-only bind mount of that folder and libfaketime
inside the image. The container's output becomes the node's log (``store.log``,
``store-node3.log``) when it is removed. A ``ServerRole`` (``base``) adds server arguments
(``--replicaof``) or starts it as a Sentinel.
"""
from __future__ import annotations

import os
import time
from pathlib import Path

import redis

from leasecheck.harness.stores.base import MASTER, ServerRole
from leasecheck.harness.stores.daemon import (LABEL, LOG_LABEL, NODE_LABEL, OWNER_LABELS, RUN_DIR_LABEL, RUN_LABEL,
                                   connect, daemon_maybe_present, owner_labels)
from leasecheck.harness.stores.image import FAKETIME_LABEL
from leasecheck.harness.errors import StoreError
from leasecheck.harness.nemesis.heal import undoes
from leasecheck.harness.run.host import FAKETIME_FIXED_ENV, free_port, libfaketime_path, proc_started
from leasecheck.rundir import STORE_LOG

FAKETIME_MOUNT = "/leasecheck/faketime"
FAKETIME_LIB_MOUNT = "/leasecheck/libfaketime.so.1"
CONF_MOUNT = "/leasecheck/conf"      # a Sentinel's config folder, writable (Sentinel rewrites its file)


class DockerStore:
    kind = "docker"
    managed = True

    def __init__(self, image: str, run_dir: Path, run_id: str, port: int | None = None,
                 faketime_file: Path | None = None, log_path: Path | None = None, node: str = "node1",
                 role: ServerRole = MASTER):
        self.image, self.run_dir, self.run_id = image, Path(run_dir), run_id
        self.node, self.role = node, role
        self.log_path = Path(log_path) if log_path else self.run_dir / STORE_LOG
        self.port = port
        self.host = "127.0.0.1"
        self.faketime_file = Path(faketime_file) if faketime_file else None
        self.client = None
        self.container = None
        self.start_s: float | None = None    # create-to-PING time of the last start

    # -- lifecycle -------------------------------------------------------------------------
    def start(self, timeout_s: float = 30.0) -> None:
        try:
            self.client = connect()
        except Exception as e:
            raise StoreError(str(e)) from None
        fixed = self.port is not None
        for attempt in range(1 if fixed else 5):
            port = self.port if fixed else free_port()
            name = f"leasecheck-store-{self.run_id}-{self.node}" + (f"-{attempt}" if attempt else "")
            t = time.monotonic()
            self.container = self.client.containers.run(**self._spec(name, port))
            if self._wait_ready(port, timeout_s):
                self.port, self.start_s = port, round(time.monotonic() - t, 3)
                return
            self._remove(self.container)   # e.g. the port was taken between our probe and its bind
            self.container = None
        raise StoreError(f"the store container ({self.image}) did not answer; see {self.log_path}")

    def _spec(self, name: str, port: int) -> dict:
        labels = {LABEL: "1", RUN_LABEL: self.run_id, RUN_DIR_LABEL: str(self.run_dir.resolve()),
                  NODE_LABEL: self.node, LOG_LABEL: str(self.log_path.resolve()), **owner_labels()}
        defaults = ["--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
                    "--daemonize", "no", "--protected-mode", "yes", "--dir", "/tmp"]
        conf = self.role.sentinel_conf
        spec = dict(
            image=self.image, entrypoint=["redis-server"], name=name, labels=labels, detach=True,
            command=self.role.argv(defaults, f"{CONF_MOUNT}/{conf.name}" if conf else None),
            network_mode="host", read_only=True, tmpfs={"/tmp": "size=16m"}, cap_drop=["ALL"],
            security_opt=["no-new-privileges"], user=f"{os.getuid()}:{os.getgid()}",
            environment={}, volumes={})
        if conf is not None:
            spec["volumes"][str(Path(conf).parent.resolve())] = {"bind": CONF_MOUNT, "mode": "rw"}
        if self.faketime_file is not None:
            self._faketime(spec)
        return spec

    def _faketime(self, spec: dict) -> None:
        """libfaketime reads the run's timestamp file through a read-only bind mount of its folder
        (a folder, not the file: the fault replaces the file atomically, i.e. a new inode)."""
        self.faketime_file.parent.mkdir(parents=True, exist_ok=True)
        if not self.faketime_file.exists():
            self.faketime_file.write_text("+0\n")
        lib = (self.client.images.get(self.image).labels or {}).get(FAKETIME_LABEL)
        if not lib:   # an image of another origin: lend it the wheel's library
            lib = FAKETIME_LIB_MOUNT
            spec["volumes"][libfaketime_path()] = {"bind": lib, "mode": "ro"}
        spec["volumes"][str(self.faketime_file.parent.resolve())] = {"bind": FAKETIME_MOUNT, "mode": "ro"}
        spec["environment"].update({
            "LD_PRELOAD": lib, "FAKETIME_TIMESTAMP_FILE": f"{FAKETIME_MOUNT}/{self.faketime_file.name}",
            **FAKETIME_FIXED_ENV})

    def _wait_ready(self, port: int, timeout_s: float) -> bool:
        deadline = time.monotonic() + timeout_s
        client = redis.Redis(host=self.host, port=port, socket_timeout=1, socket_connect_timeout=1)
        try:
            while time.monotonic() < deadline:
                try:
                    if client.ping():
                        return True
                except redis.RedisError:
                    pass
                self.container.reload()
                if self.container.status in ("exited", "dead"):
                    return False
                time.sleep(0.02)
            return False
        finally:
            client.close()

    def stop(self, timeout_s: float = 5.0) -> None:
        """Remove the container (its output saved as the node's log) — and any other of this run's
        for this node, never another node's (each node of a run stops its own)."""
        container, self.container = self.container, None
        if self.client is None:
            return
        if container is not None:
            self._remove(container, timeout_s)
        try:  # one created while Ctrl-C interrupted containers.run()
            mine = [f"{RUN_LABEL}={self.run_id}", f"{NODE_LABEL}={self.node}"]
            for c in self.client.containers.list(all=True, filters={"label": mine}, ignore_removed=True):
                self._remove(c, timeout_s)
        except Exception:
            pass

    def _remove(self, container, timeout_s: float = 5.0) -> None:
        remove_container(container, self.log_path, timeout_s)

    # -- faults ----------------------------------------------------------------------------
    def kill(self) -> None:
        """SIGKILL, as a crash would: the volatile store loses every key."""
        self.container.kill()
        self.container.wait(timeout=30)

    def restart(self, timeout_s: float = 30.0) -> None:
        """The same container again: same command, same port, empty."""
        self.container.start()
        if not self._wait_ready(self.port, timeout_s):
            raise StoreError(f"the store container did not come back on port {self.port}")

    def pause(self) -> None:
        self.container.pause()

    def resume(self) -> None:
        self.container.reload()
        if self.container.status == "paused":
            self.container.unpause()

    def resume_entry(self) -> dict:
        """The ledger's undo for ``pause()``."""
        return {"kind": "docker-unpause", "container": self.container.id}

    def is_paused(self) -> bool:
        """The daemon's own word that the cgroup freezer holds the container (its processes do
        not show as stopped in /proc: the freezer is not a signal)."""
        return bool(self.client.api.inspect_container(self.container.id)["State"].get("Paused"))

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"

    @property
    def pid(self) -> int | None:
        """The store's PID on this host (informational: faults go through the SDK)."""
        if self.container is None:
            return None
        self.container.reload()
        return self.container.attrs.get("State", {}).get("Pid") or None


def remove_container(container, log_path: Path | None, timeout_s: float = 5.0) -> None:
    """Unpause, stop, save the output to ``log_path`` (if its folder exists), remove."""
    try:
        container.reload()
        if container.status == "paused":
            container.unpause()
        if container.status in ("running", "paused", "restarting"):
            container.stop(timeout=max(1, int(timeout_s)))
    except Exception:
        pass
    if log_path is not None and log_path.parent.is_dir():
        try:
            log_path.write_bytes(container.logs(stdout=True, stderr=True, timestamps=True))
        except Exception:
            pass
    try:
        container.remove(force=True)
    except Exception as e:
        import docker.errors

        gone = isinstance(e, docker.errors.NotFound) or "already in progress" in str(e)  # another sweep
        if not gone:
            raise StoreError(f"could not remove container {container.name}: {e}") from None


def unpause(container_id: str) -> None:
    """Undo of a pause fault (the ledger's ``docker-unpause``)."""
    import docker.errors  # optional: the docker SDK is needed for --backend docker only

    try:
        c = connect(timeout_s=10).containers.get(container_id)
    except docker.errors.NotFound:
        return
    if c.status == "paused":
        c.unpause()


@undoes("docker-unpause")
def _undo_unpause(entry: dict) -> None:
    unpause(entry["container"])


def remove_leftovers(everything: bool = False, run_id: str | None = None) -> list[str]:
    """Remove containers labelled ``leasecheck=1`` whose harness is gone (all of them with
    ``everything``; only one run's with ``run_id``); each one's output goes to its node's log
    (``leasecheck.log``; a container of an older harness: the run directory's store.log) unless
    that file exists or its folder is gone."""
    if not daemon_maybe_present():
        return []
    try:
        client = connect(timeout_s=10)
    except Exception:
        return []
    done = []
    wanted = [f"{LABEL}=1"] + ([f"{RUN_LABEL}={run_id}"] if run_id else [])
    for c in client.containers.list(all=True, filters={"label": wanted}, ignore_removed=True):
        labels = c.labels or {}
        pid, started = labels.get(OWNER_LABELS[0]), labels.get(OWNER_LABELS[1])
        owner_alive = bool(pid and pid.isdigit() and str(proc_started(int(pid))) == started)
        if owner_alive and not everything:
            continue
        log = leftover_log(labels)
        try:
            remove_container(c, log, timeout_s=2)
            done.append(f"removed container {c.name} (run {labels.get(RUN_LABEL, '?')}, its harness is gone)")
        except Exception as e:
            done.append(f"could not remove container {c.name}: {e}")
    return done


def leftover_log(labels: dict) -> Path | None:
    """Where a leftover container's output goes: its node's log, if not written already."""
    run_dir = labels.get(RUN_DIR_LABEL)
    log = labels.get(LOG_LABEL) or (str(Path(run_dir) / STORE_LOG) if run_dir else None)
    return Path(log) if log and not Path(log).exists() else None
