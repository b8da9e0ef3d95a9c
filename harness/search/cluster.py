"""Runs on the hosts of a Dask distributed cluster (``--cluster``): `ClusterPool`.

Each run is one Dask task on one worker, which carries it out as this machine would — a process of
its own (`leasecheck.harness.search.task`) that starts the run's store and worker processes on that
host — under a results directory of the host's own (a temporary one). The finished run directory
travels back as bytes (a gzip'd tar, in the task's result: no shared filesystem is assumed) and is
unpacked into the caller's results directory under the name it had on the host, where the caller
reads its ``results.json`` as for a local run; the caller's ``results/index.html`` is then written
again.

A host lost mid-run gives "not run", never a verdict: Dask reschedules the task of a lost worker
(``distributed.scheduler.allowed-failures`` times, on a scheduler this pool did not start), so the
task first marks itself started (a Dask `Event` on the scheduler); an attempt that finds the mark
set does not run again but answers that the first attempt's host was lost. A local cluster is
started with ``allowed-failures`` 0, so the caller hears of the loss at once (``KilledWorker``).

``--cluster local:N`` starts a cluster of N worker processes on this machine (loopback only, one
run at a time each); ``--cluster tcp://HOST:PORT`` uses a running scheduler, one run per worker
thread. Dask is the ``cluster`` extra: ``pip install 'leasecheck[cluster]'``.
"""
from __future__ import annotations

import io
import os
import re
import shutil
import signal
import socket
import tarfile
import tempfile
import threading
import time
import uuid
from pathlib import Path

from leasecheck.harness.errors import UsageError
from leasecheck.harness.reports.html import write_index
from leasecheck.harness.search.pool import Done, Pool, done_from, run_child
from leasecheck.harness.search.task import Job
from leasecheck.rundir import LATEST

LOCAL = re.compile(r"local:(\d+)\Z")
ADDRESS = re.compile(r"(tcp|tls)://[^\s/:]+:\d+\Z")
CONNECT_TIMEOUT_S = 10
NEEDS = "--cluster needs Dask distributed: pip install 'leasecheck[cluster]'"
POLL_S = 0.5


def _distributed():
    try:
        import distributed   # optional: the `cluster` extra
    except ImportError:
        raise UsageError(NEEDS) from None
    return distributed


def check_spec(spec: str) -> None:
    """Bad input before anything starts: the form of ``--cluster`` and the engine's presence."""
    if not (LOCAL.match(spec) and int(LOCAL.match(spec).group(1)) >= 1) and not ADDRESS.match(spec):
        raise UsageError(f"--cluster {spec}: give local:N (a local cluster of N worker processes, N >= 1) "
                         f"or a scheduler's address, e.g. --cluster tcp://127.0.0.1:8786")
    _distributed()


def _tag(key: str) -> str:
    return f"leasecheck-{key}-{uuid.uuid4().hex[:12]}"


def remote_run(job: Job, tag: str) -> dict:
    """The task, on a worker host: run ``job`` under a temporary results directory and return its
    reply with the run directory as a tar (``tar``) and its path relative to the results directory
    (``relative``)."""
    distributed = _distributed()
    started = distributed.Event(f"{tag}-started")
    if started.is_set():
        return {"lost": "the host running it was lost mid-run (Dask ran the task again elsewhere; "
                        "it was not run twice)"}
    started.set()
    stop = distributed.Event(f"{tag}-stop")
    host = socket.gethostname()
    tmp = Path(tempfile.mkdtemp(prefix="leasecheck-cluster-"))
    procs: list = []
    finished = threading.Event()

    def watch_stop() -> None:          # the caller's stop(): SIGTERM, as Ctrl-C would
        while not finished.is_set():
            try:
                if stop.wait(POLL_S):
                    if procs and procs[0].poll() is None:
                        procs[0].send_signal(signal.SIGTERM)
                    return
            except Exception:   # noqa: BLE001 - the scheduler went away: the run ends at its limit
                return
    threading.Thread(target=watch_stop, daemon=True).start()
    try:
        reply = run_child(job.with_results_dir(str(tmp)), procs.append)
    finally:
        finished.set()
    reply["host"] = host
    if reply.get("run_dir"):
        run_dir = Path(reply["run_dir"])
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w:gz") as tar:
            tar.add(run_dir, arcname=run_dir.relative_to(tmp).as_posix())
        reply["relative"] = run_dir.relative_to(tmp).as_posix()
        reply["tar"] = buf.getvalue()
    shutil.rmtree(tmp, ignore_errors=True)
    return reply


def unpack(data: bytes, relative: str, results_dir: Path) -> Path:
    """Unpack a run directory shipped from a host into ``results_dir`` under its own name (a run
    already there under that name — another host's, in the same microsecond — is left alone and
    this one gets the next free name) and point ``latest`` at it."""
    results_dir = Path(results_dir).resolve()
    rel = Path(relative)
    if rel.is_absolute() or ".." in rel.parts or len(rel.parts) != 2:
        raise ValueError(f"a run directory from a host has an unexpected name: {relative!r}")
    results_dir.mkdir(parents=True, exist_ok=True)
    target = results_dir / rel
    n = 0
    while target.exists():
        n += 1
        target = results_dir / rel.parent / f"{rel.name[:-7]}{(int(rel.name[-7:-1]) + n) % 1_000_000:06d}Z"
    with tempfile.TemporaryDirectory(prefix=".unpack-", dir=results_dir) as tmp:
        with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
            tar.extractall(tmp, filter="data")
        target.parent.mkdir(parents=True, exist_ok=True)
        (Path(tmp) / rel).rename(target)
    latest = results_dir / LATEST
    try:
        if latest.is_symlink() or latest.exists():
            latest.unlink()
        latest.symlink_to(target.relative_to(results_dir))
    except OSError:
        pass
    return target


class ClusterPool(Pool):
    """Runs as Dask tasks, one per worker thread at a time (``slots``, unless given fewer)."""

    def __init__(self, spec: str, slots: int | None = None):
        check_spec(spec)
        distributed = _distributed()
        self._cluster = None
        if LOCAL.match(spec):
            import dask   # optional, with distributed
            n = int(LOCAL.match(spec).group(1))
            with dask.config.set({"distributed.scheduler.allowed-failures": 0}):
                self._cluster = distributed.LocalCluster(n_workers=n, threads_per_worker=1, processes=True,
                                                         host="127.0.0.1", dashboard_address="127.0.0.1:0",
                                                         scheduler_port=0, silence_logs=50)
            self.client = distributed.Client(self._cluster)
        else:
            try:
                self.client = distributed.Client(spec, timeout=CONNECT_TIMEOUT_S)
            except (OSError, TimeoutError) as e:
                raise UsageError(f"--cluster {spec}: no scheduler answered within {CONNECT_TIMEOUT_S} s ({e}); "
                                 f"start one (`dask scheduler`) or use --cluster local:N") from None
        threads = sum(self.client.nthreads().values())
        if threads < 1:
            self.close()
            raise UsageError(f"--cluster {spec}: the scheduler has no workers; start some (`dask worker {spec}`)")
        super().__init__(min(slots, threads) if slots else threads)
        self._tags: dict[str, str] = {}
        self._lock = threading.Lock()

    def _execute(self, job: Job) -> Done:
        distributed = _distributed()
        t = time.monotonic()
        tag = _tag(job.key)
        with self._lock:
            self._tags[job.key] = tag
        future = self.client.submit(remote_run, job, tag, key=tag, pure=False, retries=0)
        try:
            reply = future.result()
        except distributed.KilledWorker as e:
            reply = {"lost": f"the worker running it was lost mid-run ({e})"}
        except Exception as e:   # noqa: BLE001 - the scheduler or the connection went: no verdict
            reply = {"lost": f"no verdict came back from the cluster ({type(e).__name__}: {e})"}
        finally:
            with self._lock:
                self._tags.pop(job.key, None)
        if reply.get("tar") is not None:
            results_dir = Path((job.plan.cfg if job.plan is not None else job.cfg).results_dir)
            try:
                reply["run_dir"] = str(unpack(reply.pop("tar"), reply["relative"], results_dir))
                write_index(results_dir.resolve())
            except (OSError, ValueError, tarfile.TarError) as e:   # the run came back but cannot be kept here
                reply.update(run_dir=None, error=f"its run directory from {reply.get('host')} could not be "
                                                 f"unpacked into {results_dir}: {type(e).__name__}: {e}")
        return done_from(job.key, reply, time.monotonic() - t)

    def stop(self, key: str) -> None:
        with self._lock:
            tag = self._tags.get(key)
        if tag is not None:
            _distributed().Event(f"{tag}-stop", client=self.client).set()

    def worker_pids(self) -> dict[str, int]:
        """Each worker's address and process id (the tests kill one)."""
        return self.client.run(os.getpid)

    def close(self) -> None:
        try:
            super().close()
        finally:
            self.client.close()
            if self._cluster is not None:
                self._cluster.close()
