"""One run: store, audit, workers, time limit, stop, merged history, verdict.

The order matters and is always undone in reverse: the run directory and ``config.json`` first,
then the store, then the audit (before any worker connects, so it sees every command), then the
workers. Stopping — at the time limit, on Ctrl-C / SIGTERM, when a worker dies, or when our own
code raises — lets the workers finish their jobs and releases, drains the audit, stops the store
and writes the merged history, so a run never loses what it recorded.
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

import redis

from harness.audit import ClockSampler, MonitorRecorder
from harness.config import RunConfig
from harness.errors import StoreError
from harness.history import HistoryWriter
from harness.store import EmbeddedStore, ExternalStore

READY_TIMEOUT_S = 120.0


class Interrupted(Exception):
    """Ctrl-C or SIGTERM reached the harness."""


def make_run_dir(cfg: RunConfig) -> Path:
    stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%S.%fZ")
    base = Path(cfg.results_dir)
    run_dir = base / cfg.scenario / stamp
    (run_dir / "history.d").mkdir(parents=True)
    latest = base / "latest"
    try:
        if latest.is_symlink() or latest.exists():
            latest.unlink()
        latest.symlink_to(Path(cfg.scenario) / stamp)
    except OSError:
        pass
    return run_dir


class Run:
    def __init__(self, cfg: RunConfig, log=print):
        self.cfg = cfg
        self.log = log
        self.run_dir = make_run_dir(cfg)
        self.workers: list[subprocess.Popen] = []
        self.store = None
        self.audit: MonitorRecorder | None = None
        self.clock: ClockSampler | None = None
        self.history: HistoryWriter | None = None
        self.admin: redis.Redis | None = None
        self.end_reason = "time-limit"
        self.audit_complete = False

    # -- lifecycle -------------------------------------------------------------------------
    def execute(self) -> Path:
        """Run to the end; returns the run directory (its history is always written)."""
        old = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}

        def interrupt(signum, _frame):
            raise Interrupted(signal.Signals(signum).name)

        signal.signal(signal.SIGINT, interrupt)
        signal.signal(signal.SIGTERM, interrupt)
        try:
            self._start()
            self._wait()
        except Interrupted as e:
            self.end_reason = "interrupted"
            self.log(f"[yellow]{e}: stopping the workers and keeping the history[/]")
        except BaseException:
            self.end_reason = "error"
            raise
        finally:
            # Ignore further Ctrl-C while we shut down cleanly; the defaults come back after.
            signal.signal(signal.SIGINT, signal.SIG_IGN)
            signal.signal(signal.SIGTERM, signal.SIG_IGN)
            try:
                self._stop()
            finally:
                for s, h in old.items():
                    signal.signal(s, h)
        return self.run_dir

    def _start(self) -> None:
        cfg = self.cfg
        if cfg.store_url:
            self.store = ExternalStore(cfg.store_host, cfg.store_port, cfg.store_db)
        else:
            self.store = EmbeddedStore(cfg.store_bin, self.run_dir, cfg.store_port)
        self.store.start()
        cfg.store_port = self.store.port
        cfg.save(self.run_dir / "config.json")
        self.admin = redis.Redis(host=cfg.store_host, port=cfg.store_port, db=cfg.store_db,
                                 socket_timeout=10)
        self.audit = MonitorRecorder(cfg.store_host, cfg.store_port, self.run_dir / "audit.log")
        self.audit.start()

        env = dict(os.environ, PYTHONUNBUFFERED="1")
        root = str(Path(__file__).resolve().parent.parent)
        env["PYTHONPATH"] = root + os.pathsep + env.get("PYTHONPATH", "") if env.get("PYTHONPATH") else root
        errlog = open(self.run_dir / "workers.log", "ab")
        for i in range(cfg.workers):
            self.workers.append(subprocess.Popen(
                [sys.executable, "-m", "harness.worker", str(self.run_dir), str(i)],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=errlog, env=env,
                start_new_session=True, text=True, bufsize=1))
        errlog.close()
        deadline = time.monotonic() + READY_TIMEOUT_S
        for i, w in enumerate(self.workers):
            line = _readline(w, deadline)
            if line.strip() != "ready":
                raise StoreError(f"worker {i} did not start (see {self.run_dir / 'workers.log'})")

        t0 = time.monotonic_ns()
        self.history = HistoryWriter(self.run_dir / "history.d" / "harness.jsonl", t0_ns=t0)
        self.clock = ClockSampler(self.admin, self.run_dir / "store-clock.jsonl", t0)
        self.clock.start()
        self.history.record("harness", "run_start", config=cfg.to_json())
        for w in self.workers:
            w.stdin.write(f"go {t0}\n")
            w.stdin.flush()
        self.log(f"running {cfg.workers} worker(s) x {cfg.slots} slot(s), lease [bold]{cfg.lease}[/], "
                 f"TTL {cfg.ttl_s:g}s, {cfg.time_limit_s:g}s, seed {cfg.seed} -> {self.run_dir}")

    def _wait(self) -> None:
        end = time.monotonic() + self.cfg.time_limit_s
        while time.monotonic() < end:
            for i, w in enumerate(self.workers):
                code = w.poll()
                if code is not None and code != 0:
                    self.end_reason = "worker-crashed"
                    self.log(f"[red]worker {i} exited with code {code}; stopping the run[/]")
                    return
            time.sleep(0.1)

    def _stop(self) -> None:
        grace = time.monotonic() + _grace_s(self.cfg)
        for w in self.workers:
            if w.poll() is None:
                try:
                    w.stdin.write("stop\n")
                    w.stdin.flush()
                except (BrokenPipeError, OSError):
                    pass
        for w in self.workers:
            try:
                w.wait(max(0.1, grace - time.monotonic()))
            except subprocess.TimeoutExpired:
                os.kill(w.pid, signal.SIGCONT)
                w.kill()
                w.wait()
            for stream in (w.stdin, w.stdout):
                try:
                    stream.close()
                except OSError:
                    pass
        if self.history:
            self.history.record("harness", "run_end", reason=self.end_reason)
            self.history.close()
        if self.clock:
            self.clock.stop()
        if self.audit:
            self.audit_complete = self.audit.finish(self.admin) if self.admin else False
        if self.store:
            self.store.stop()
        if (self.run_dir / "history.d" / "harness.jsonl").exists():
            from checkers.history import write_merged

            write_merged(self.run_dir)


def _grace_s(cfg: RunConfig) -> float:
    from harness.durations import parse_distribution

    longest = parse_distribution(cfg.job_duration).max_s
    return min(60.0, longest + 2 * (cfg.client_timeout_s or 5.0) + 5.0)


def _readline(proc: subprocess.Popen, deadline: float) -> str:
    import selectors

    sel = selectors.DefaultSelector()
    sel.register(proc.stdout, selectors.EVENT_READ)
    try:
        if sel.select(max(0.0, deadline - time.monotonic())):
            return proc.stdout.readline()
        return ""
    finally:
        sel.close()
