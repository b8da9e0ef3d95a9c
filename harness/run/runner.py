"""One run: store nodes, audit, workers, time limit, stop, merged history, verdict.

The order matters and is always undone in reverse: the run directory and ``config.json`` first,
then the store nodes (``leasecheck.harness.stores.node``: one, or several for ``--topology redlock|replicated``), then each node's audit (before any worker
connects, so it sees every command), then the workers. Stopping — at the time limit, on Ctrl-C / SIGTERM, when a worker dies, or when our own
code raises — lets the workers finish their jobs and releases, drains the audit, stops the store
and writes the merged history, so a run never loses what it recorded. A run directory that stops
taking writes (out of disk, read-only: ``record/writes``) stops the run the same way; what is
on disk stays (``history.d/`` when the merged file cannot be written) and `execute` raises
`writes.Unwritable` naming it.
"""
from __future__ import annotations

import os
import random
import selectors
import signal
import subprocess
import sys
import threading
import time
from datetime import datetime, timezone
from pathlib import Path

import redis

from leasecheck.checkers.read.history import write_merged
from leasecheck.harness.settings.config import RunConfig
from leasecheck.harness.settings.durations import parse_distribution
from leasecheck.harness.errors import LeasecheckError, StoreError
from leasecheck.harness.faults import FaultContext, kill_holder
from leasecheck.harness.nemesis.heal import Ledger, heal_leftovers
from leasecheck.harness.record import writes
from leasecheck.harness.record.history import HistoryWriter
from leasecheck.harness.run.fork_server import ForkServer
from leasecheck.harness.run.holders import HolderTable, pump
from leasecheck.harness.run.job_numbers import FILE as JOB_NUMBERS
from leasecheck.harness.run.slot_board import FILE as SLOT_BOARD, SlotBoard
from leasecheck.harness.run.host import faketime_env
from leasecheck.harness.stores.leftovers import remove_run_keys
from leasecheck.harness.nemesis.driver import Nemesis
from leasecheck.harness.stores.node import Node, nodes_for
from leasecheck.harness.run.preflight import Plan
from leasecheck.harness.stores.replication import Replication
from leasecheck.harness.run.replies import Replies
from leasecheck.harness.stores.container import remove_leftovers
from leasecheck.harness.stores.kinds import store_for
from leasecheck.harness.stores.topology import node_names
import leasecheck
from leasecheck.events import HARNESS, RUN_END, RUN_START
from leasecheck.protocol import HISTORY_SCHEMA_VERSION
from leasecheck.rundir import (FAKETIME, HARNESS_PART, HISTORY, HISTORY_PARTS, LATEST, WORKERS_LOG, RunFiles,
                               save_config, save_schedule)

READY_TIMEOUT_S = 120.0
WORKER_MODULE = "leasecheck.harness.run.worker"
# "exec" starts every worker with subprocess.Popen, as before the fork server (a comparison, a debug)
WORKER_START_ENV = "LEASECHECK_WORKER_START"
NEMESIS_LOG = "nemesis.log"        # the traceback of a nemesis that failed (read by no checker)


class Interrupted(Exception):
    """Ctrl-C or SIGTERM reached the harness."""


class NemesisFailed(LeasecheckError):
    """A fault could not be injected or undone: one line (the error); the traceback is kept in the
    run directory's ``nemesis.log``."""

    def __init__(self, trace: str):
        self.trace = trace
        last = next((line for line in reversed(trace.strip().splitlines()) if line.strip()), "unknown error")
        super().__init__(f"the nemesis failed: {last.strip()}")


def make_run_dir(cfg: RunConfig) -> Path:
    """The run's directory, as an absolute path: every path derived from it is handed to other
    processes (the store's ``--dir`` and log, libfaketime's timestamp files, the workers'
    history files, docker bind mounts), and a relative one would be resolved against *their*
    working directory — a store started with ``--dir`` would never find its timestamp file."""
    base = Path(cfg.results_dir).resolve()
    (base / cfg.scenario).mkdir(parents=True, exist_ok=True)
    while True:     # runs started at once (hunt --parallel) never share a directory: the first to make it owns it
        stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%S.%fZ")
        run_dir = base / cfg.scenario / stamp
        try:
            run_dir.mkdir()
            break
        except FileExistsError:
            time.sleep(0.000_001)
    (run_dir / HISTORY_PARTS).mkdir()
    latest = base / LATEST
    try:
        if latest.is_symlink() or latest.exists():
            latest.unlink()
        latest.symlink_to(Path(cfg.scenario) / stamp)
    except OSError:
        pass
    return run_dir


class Run:
    """Carries out a ``Plan`` (``leasecheck.harness.run.preflight``): the configuration, the fault schedule, the
    targets and whether the workers go through the proxy are all decided before it starts."""

    def __init__(self, plan: Plan, log=print, worker_path: list[str] | None = None):
        """``worker_path``: directories the workers import from before the installed packages (a
        caller's own lease module; the Python API passes its import path)."""
        cfg = plan.cfg
        self.plan = plan
        self.cfg = cfg
        self.log = log
        self.worker_path = list(worker_path or [])
        self.run_dir = make_run_dir(cfg)
        self.workers: list = []                # subprocess.Popen, or fork_server.Forked (the same calls)
        self.fork_server: ForkServer | None = None
        self.nodes: list[Node] = []            # the store nodes (one, or several), in start order
        self.replication: Replication | None = None   # --topology replicated: replication, Sentinels
        self.history: HistoryWriter | None = None
        self.end_reason = "time-limit"
        self.end_signal: str | None = None    # SIGINT / SIGTERM when a signal stopped the run
        self.stopped_at: int | None = None    # history ns when stopping began (run_end's stopped_at)
        self.audit_complete = False
        self.ledger = Ledger(self.run_dir)
        self.holders = HolderTable()
        self.replies = Replies()
        self._pump_stop = threading.Event()
        self._pump: threading.Thread | None = None
        self.nemesis: Nemesis | None = None
        self.faketime_dir = self.run_dir / FAKETIME
        self.killed: set[int] = set()          # workers kill:holder killed (index in `workers`)
        self._replacing = threading.Lock()
        self._board_workers = cfg.workers
        self._t0: int | None = None           # CLOCK_MONOTONIC at the run's start

    # -- lifecycle -------------------------------------------------------------------------
    def execute(self) -> Path:
        """Run to the end; returns the run directory (its history is always written)."""
        # Signals reach only the main thread: a run started from another thread (the Python API
        # in a caller's thread) keeps the caller's handlers and stops at its time limit.
        main = threading.current_thread() is threading.main_thread()
        old = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)} if main else {}

        def interrupt(signum, _frame):
            raise Interrupted(signal.Signals(signum).name)

        for s in old:
            signal.signal(s, interrupt)
        try:
            try:
                self._start()
            except (ConnectionError, redis.ConnectionError, redis.TimeoutError) as e:
                raise StoreError(f"the store stopped answering while the run started ({e}); "
                                 f"see {self.run_dir}") from e
            self._wait()
        except Interrupted as e:
            self._stopping()
            self.end_reason, self.end_signal = "interrupted", str(e)
            self.log(f"[yellow]{e}: stopping the workers and keeping the history[/]")
        except OSError as e:
            self._stopping()
            if not writes.unwritable(e):
                self.end_reason = "error"
                raise
            writes.note(getattr(e, "filename", None) or self.run_dir, e)   # a write of our own start
            self.end_reason = "unwritable"
        except BaseException:
            self._stopping()
            self.end_reason = "error"
            raise
        finally:
            # Ignore further Ctrl-C while we shut down cleanly; the defaults come back after.
            for s in old:
                signal.signal(s, signal.SIG_IGN)
            try:
                self._stop()
            finally:
                self._end_fork_server()      # by its PID, whatever _stop got to
                for s, h in old.items():
                    signal.signal(s, h)
        first = writes.failure(self.run_dir)
        if first is not None:
            writes.forget(self.run_dir)
            at_s = (first.at_ns - self._t0) / 1e9 if self._t0 is not None else None
            raise writes.Unwritable(self.run_dir, first, kept(self.run_dir), at_s)
        return self.run_dir

    def _start(self) -> None:
        cfg = self.cfg
        for line in heal_leftovers(Path(cfg.results_dir)) + remove_leftovers():
            self.log(f"[yellow]healed a killed run's faults:[/] {line}")
        skew_store = "store" in self.plan.skews
        skew_workers = "workers" in self.plan.skews
        env = dict(os.environ, PYTHONUNBUFFERED="1")
        # The folder holding the leasecheck package (the repository root of a source checkout),
        # then the caller's own import path, then what the environment already says.
        root = str(Path(leasecheck.__file__).resolve().parent.parent)
        env["PYTHONPATH"] = os.pathsep.join(dict.fromkeys(
            [root, *self.worker_path, *filter(None, [env.get("PYTHONPATH")])]))
        # The fork server imports the workers' modules while the stores start. A worker under
        # libfaketime needs LD_PRELOAD at its exec: a run that skews the workers' clocks has none.
        if not skew_workers and env.get(WORKER_START_ENV) != "exec":
            with open(self.run_dir / WORKERS_LOG, "ab") as errlog:
                self.fork_server = ForkServer([WORKER_MODULE], env, errlog, lease=cfg.lease)
        if skew_store or skew_workers:
            self.faketime_dir.mkdir()
        for node in nodes_for(cfg, self.run_dir, skew_store, node_names(cfg)):
            self.nodes.append(node)    # before it starts: a store that half-started is stopped too
            node.store.start()
            if self.plan.needs_proxy:
                node.start_proxy(self.run_dir, cfg.run_id, cfg.toxiproxy_url)
        if cfg.topology == "replicated":
            self.replication = Replication(  # its Sentinels: stores of the nodes' kind
                self.nodes, self.run_dir, cfg.sentinels,
                lambda name, log, role: store_for(cfg, self.run_dir, log, node=name, role=role))
            self.replication.start()
        # A single-endpoint lease reaches the first node, through its proxy if any; a run of
        # several nodes records each node's address for the workers and the checker.
        first = self.nodes[0]
        cfg = self.cfg = cfg.with_(store_port=first.store.port)
        if first.proxy:
            cfg = self.cfg = cfg.with_(client_port=first.proxy.listen_port)
        if len(self.nodes) > 1:
            cfg = self.cfg = cfg.with_(store_nodes=[
                {"name": n.name, "port": n.store.port, "client_port": n.proxy.listen_port if n.proxy else None}
                | ({"peer_port": self.replication.peer_ports[n.name]} if self.replication else {})
                for n in self.nodes])
        if self.replication:
            cfg = self.cfg = cfg.with_(sentinel_ports=self.replication.describe()["sentinel_ports"])
        save_config(self.run_dir, cfg.to_json())
        for node in self.nodes:
            node.connect(cfg.store_db)
            if cfg.audit:
                node.start_audit()

        # Room on the board for the replacements kill:holder starts (each under a new name).
        self._board_workers = cfg.workers + sum(st.fault == "kill" and st.target == "holder" for st in self.plan.steps)
        self.holders.board = SlotBoard(self.run_dir / SLOT_BOARD, self._board_workers, cfg.slots, create=True)
        (self.run_dir / JOB_NUMBERS).write_bytes(b"")     # the run's jobs, numbered as they start
        self._env, self._skew_workers = env, skew_workers
        for i in range(cfg.workers):
            self.workers.append(self._spawn(i))
        deadline = time.monotonic() + READY_TIMEOUT_S
        for i, w in enumerate(self.workers):
            line = _readline(w, deadline)
            if line.strip() != b"ready":
                raise StoreError(f"worker {i} did not start (see {self.run_dir / WORKERS_LOG})")
        self._pump = threading.Thread(target=pump, args=([w.stdout for w in self.workers],
                                                         self._pump_stop, self.replies),
                                      name="holders", daemon=True)
        self._pump.start()

        t0 = self._t0 = time.monotonic_ns()
        self.history = HistoryWriter(RunFiles(self.run_dir).part(HARNESS_PART), t0_ns=t0)
        for node in self.nodes:
            node.start_clock(t0)
        steps = self._schedule()
        self.history.record(HARNESS, RUN_START, schema_version=HISTORY_SCHEMA_VERSION, config=cfg.to_json())
        for w in self.workers:
            w.stdin.write(f"go {t0}\n".encode())
        if steps:
            ctx = FaultContext(cfg=cfg, run_dir=self.run_dir, ledger=self.ledger, workers=self.workers,
                               holders=self.holders, rng=random.Random(f"{cfg.seed}:nemesis-targets"),
                               nodes=self.nodes, faketime_dir=self.faketime_dir, replies=self.replies,
                               replication=self.replication, killed=self.killed)
            kill_holder.register(self.run_dir, self._replace)
            self.nemesis = Nemesis(ctx, steps, self.history, t0, in_turn=cfg.faults_in_turn)
            self.nemesis.start()
        for note in self.plan.notes:
            self.log(f"[yellow]note:[/] {note}")
        self.log(f"running {cfg.workers} worker(s) x {cfg.slots} slot(s), lease [bold]{cfg.lease}[/], "
                 f"TTL {cfg.ttl_s:g}s, {cfg.time_limit_s:g}s, seed {cfg.seed} -> {self.run_dir}")

    def _spawn(self, i: int):
        """Start worker ``w{i}`` (it prints ``ready`` once its slots are built): forked by the fork
        server (``leasecheck.harness.run.fork_server``) when there is one and it can serve it,
        else a fresh ``python -m`` of its own — the same process either way (its pipes, its log,
        its environment, a session of its own)."""
        env = self._env
        if self._skew_workers:
            env = dict(env, **faketime_env(self.faketime_dir / f"w{i}"))
        args = [str(self.run_dir), str(i), str(self._board_workers)]
        with open(self.run_dir / WORKERS_LOG, "ab") as errlog:
            if self.fork_server is not None:
                forked = self.fork_server.spawn(WORKER_MODULE, args, env, errlog)
                if forked is not None:
                    return forked
                if self.fork_server.refused:    # why this worker is a fresh interpreter, for a reader of the run
                    errlog.write(f"leasecheck: w{i} started fresh, not forked: {self.fork_server.refused}\n".encode())
                    errlog.flush()
            return subprocess.Popen(
                [sys.executable, "-m", WORKER_MODULE, *args],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=errlog, env=env,
                start_new_session=True, bufsize=0)

    def _replace(self) -> tuple[str, int] | None:
        """kill:holder's heal: start a replacement worker under the next new name and let it go
        (its stdout read by a pump of its own). None once the run is stopping, or when the board
        has no room left."""
        with self._replacing:
            i = len(self.workers)
            if self.stopped_at is not None or i >= self._board_workers:
                return None
            w = self._spawn(i)
            if _readline(w, time.monotonic() + READY_TIMEOUT_S).strip() != b"ready":
                w.kill()
                w.wait()
                raise StoreError(f"replacement worker w{i} did not start (see {self.run_dir / WORKERS_LOG})")
            w.stdin.write(f"go {self._t0}\n".encode())
            threading.Thread(target=pump, args=([w.stdout], self._pump_stop, self.replies),
                             name=f"holders-w{i}", daemon=True).start()
            self.workers.append(w)
            return f"w{i}", w.pid

    def _schedule(self) -> list:
        """The fault steps of this run, saved as schedule.json before any of them starts."""
        steps = list(self.plan.steps)
        save_schedule(self.run_dir, [st.to_json() for st in steps])
        return steps

    def _wait(self) -> None:
        end = time.monotonic() + self.cfg.time_limit_s
        while time.monotonic() < end:
            first = writes.failure(self.run_dir)
            if first is None and any(w.poll() == writes.WORKER_EXIT for w in list(self.workers)):
                first = "a worker could not write its history"
            if first is not None:
                self._stopping()
                self.end_reason = "unwritable"
                what = first.describe() if isinstance(first, writes.Failure) else first
                self.log(f"[red]{what}; stopping the run and keeping what it recorded[/]")
                return
            for i, w in enumerate(list(self.workers)):
                code = w.poll()
                if code is not None and code != 0 and i not in self.killed:
                    self._stopping()
                    self.end_reason = "worker-crashed"
                    self.log(f"[red]worker {i} exited with code {code}; stopping the run[/]")
                    return
            dead = self._dead_part()
            if dead is not None:
                self._stopping()
                self.end_reason = "part-died"
                self.log(f"[red]{dead}; stopping the run[/]")
                return
            if self.nemesis and self.nemesis.error:
                try:
                    (self.run_dir / NEMESIS_LOG).write_text(self.nemesis.error)
                except OSError:
                    pass
                raise NemesisFailed(self.nemesis.error)
            time.sleep(0.1)
        self._stopping()

    def _dead_part(self) -> str | None:
        """A part of the run that died under it (killed from outside): a node's embedded proxy, or
        its store when no fault of the plan stops the store on purpose."""
        store_may_stop = any(st.fault in ("kill", "failover") for st in self.plan.steps)
        for node in self.nodes:
            embedded = node.proxy.embedded if node.proxy else None
            if embedded is not None and embedded.proc is not None and embedded.proc.poll() is not None:
                return f"the proxy of {node.name} (pid {embedded.pid}) exited with code {embedded.proc.returncode}"
            proc = getattr(node.store, "proc", None)
            if not store_may_stop and proc is not None and proc.poll() is not None:
                return f"the store {node.name} (pid {proc.pid}) exited with code {proc.returncode}"
        return None

    def _stopping(self) -> None:
        """Note when the workers stopped claiming (the first call wins): the checker compares it
        with the planned time limit to tell a run cut short."""
        if self.stopped_at is None and self.history is not None:
            self.stopped_at = self.history.now()

    def _stop(self) -> None:
        # Heal first: a stopped worker cannot stop, a skewed store must not outlive the run.
        self._stopping()          # no replacement worker starts from here on
        if self.nemesis:
            self.nemesis.stop(self.end_reason)
        kill_holder.unregister(self.run_dir)
        for err in self.ledger.heal_all():
            self.log(f"[red]could not heal:[/] {err}")
        grace = time.monotonic() + _grace_s(self.cfg)
        for w in self.workers:
            if w.poll() is None:
                try:
                    w.stdin.write(b"stop\n")
                except (BrokenPipeError, OSError):
                    pass
        for w in self.workers:
            try:
                w.wait(max(0.1, grace - time.monotonic()))
            except subprocess.TimeoutExpired:
                os.kill(w.pid, signal.SIGCONT)
                w.kill()
                w.wait()
            _end_group(w.pid)
            for stream in (w.stdin, w.stdout):
                try:
                    stream.close()
                except OSError:
                    pass
        self._end_fork_server()
        self._pump_stop.set()
        if self._pump:
            self._pump.join(2)
        if self.holders.board is not None:      # only the workers and the faults read it
            self.holders.board.close()
            (self.run_dir / SLOT_BOARD).unlink(missing_ok=True)
            (self.run_dir / JOB_NUMBERS).unlink(missing_ok=True)
        if self.history:
            self._stopping()
            extra = {"signal": self.end_signal} if self.end_signal else {}
            self.history.record(HARNESS, RUN_END, reason=self.end_reason, stopped_at=self.stopped_at,
                                **extra)
            self.history.close()
        complete = [node.stop_recorders() for node in self.nodes]
        self.audit_complete = bool(complete) and all(complete)
        if self.replication:
            self.replication.stop()
        for node in self.nodes:
            if not node.store.managed and node.admin:
                self._remove_run_keys(node)
            node.stop()
        if RunFiles(self.run_dir).part(HARNESS_PART).exists():
            try:
                write_merged(self.run_dir, drop_parts=True)   # the history is kept once
            except OSError as e:
                if not writes.unwritable(e):
                    raise
                writes.note(self.run_dir / HISTORY, e)       # history.d/ stays: `check` merges it


    def _end_fork_server(self) -> None:
        """End the fork server by its PID (its workers have ended; none starts from here on)."""
        server, self.fork_server = self.fork_server, None
        if server is not None:
            server.close()

    def _remove_run_keys(self, node: Node) -> None:
        """A store the harness did not start keeps nothing of the run."""
        try:
            n = remove_run_keys(node.admin, self.cfg.key_prefix, self.cfg.run_id)
            self.log(f"removed {n} key(s) this run left in the store")
        except redis.RedisError as e:
            self.log(f"[yellow]could not remove this run's keys from the store:[/] {e}")


def kept(run_dir: Path) -> list[str]:
    """What a run directory holds of its history and audit, in words (``history.d/: 3 files,
    812 lines``, ``audit.log: 1,204 lines``)."""
    files = RunFiles(run_dir)
    out = []
    if files.history.is_file():
        out.append(f"{HISTORY}: {_lines(files.history):,} lines")
    elif files.parts.is_dir():
        parts = sorted(files.parts.glob("*.jsonl"))
        out.append(f"{HISTORY_PARTS}/: {len(parts)} files, {sum(_lines(p) for p in parts):,} lines")
    for audit in sorted(Path(run_dir).glob("audit*.log")):
        out.append(f"{audit.name}: {_lines(audit):,} lines")
    return out


def _lines(path: Path) -> int:
    with open(path, "rb") as f:
        return sum(chunk.count(b"\n") for chunk in iter(lambda: f.read(1 << 20), b""))


def _end_group(pid: int) -> None:
    """Kill what is left of a worker's process group once the worker has exited: the child
    processes of an ``exec:`` lease (a worker closes them as it ends; one that was killed cannot).
    The group's id stays reserved while any member lives, so it names no other process."""
    try:
        os.killpg(pid, signal.SIGCONT)
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def _grace_s(cfg: RunConfig) -> float:
    """How long the workers get to finish after ``stop``: their last job and release — and, for a
    call that hangs (as late as the release after the longest job), the call bound, at whose end
    the worker reports it and leaves that slot behind. A worker still running then is killed."""
    longest = parse_distribution(cfg.job_duration).max_s
    return max(min(60.0, longest + 2 * (cfg.client_timeout_s or 5.0) + 5.0), longest + cfg.call_bound_s + 3.0)


def _readline(proc: subprocess.Popen, deadline: float) -> bytes:
    """One line from an unbuffered pipe, byte by byte (only the short "ready" handshake)."""
    fd = proc.stdout.fileno()
    line = b""
    sel = selectors.DefaultSelector()
    sel.register(fd, selectors.EVENT_READ)
    try:
        while not line.endswith(b"\n"):
            if not sel.select(max(0.0, deadline - time.monotonic())):
                return line
            ch = os.read(fd, 1)
            if not ch:
                return line
            line += ch
        return line
    finally:
        sel.close()
