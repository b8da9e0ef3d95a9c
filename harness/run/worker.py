"""A worker: one OS process running ``--slots`` claim loops, each on its own connection.

Started by the runner as ``python -m leasecheck.harness.run.worker RUN_DIR INDEX``, or forked as that
process by the run's fork server (``leasecheck.harness.run.fork_server``, which then calls `main`). Protocol on stdin/stdout:
the worker prints ``ready`` once its slots are built, waits for ``go <t0_ns>`` (the run's start
on CLOCK_MONOTONIC), runs until the time limit, and stops early on ``stop``, on SIGTERM, or when
stdin closes (the harness died). It answers ``clock <token>`` with ``clock <token> <wall_ns>``
(the clock probe of ``clock:workers``). On one store each slot also has a port of its own, the
wire path (``leasecheck.harness.record.wire``): a ``connect = "url"`` lease is built with its URL,
and the client a lease is handed shows that port as its address. It also answers
``hang <slot> <token>`` / ``unhang <slot>`` by freezing
and thawing that slot's job (``hang:holder``, ``leasecheck.workloads.stall``). A replacement worker
that ``kill:holder`` starts gets a third argument, the board's size in workers. Which slot holds a claim and which lease call it is
inside go to the run's slot board in shared memory (``leasecheck.harness.run.slot_board``: whom to pause).
Each slot finishes its current job and releases before it exits, so the history ends with
complete operations — except a slot stuck in a lease call the watch reported hung
(``leasecheck.harness.run.hung_watch``): once the time limit has passed it is left behind, its
call left open, and the worker ends without it (``worker_end`` says which).

A synchronous lease's slots are threads (``claim_loop.Slot``); an asynchronous lease's
(``async def acquire``) are tasks on one event loop in one thread of this process
(``async_claim_loop``). A lease declaring ``connect = "url"`` is handed its slot's URL
(``leasecheck.harness.run.slot_url``) instead of the audited client; a lease that runs a process
of its own per slot (``exec:``) gets a factory of its own per slot (``for_slot``), closed when the
slots end.
"""
from __future__ import annotations

import os
import signal
import sys
import threading
import time
import traceback
from pathlib import Path

from leasecheck.harness.settings.config import RunConfig
from leasecheck.harness.record.connection import SendTracker, make_client, make_sentinel_client
from leasecheck.harness.settings.durations import parse_distribution
from leasecheck.harness.record import writes
from leasecheck.harness.record.history import HistoryWriter
from leasecheck.harness.record.wire import Wire
from leasecheck.harness.run.hung_watch import HungWatch, stops_of
from leasecheck.harness.run.job_numbers import FILE as JOB_NUMBERS, JobNumbers
from leasecheck.harness.run.slot_board import FILE as SLOT_BOARD, SlotBoard
from leasecheck.harness.run.slot_url import slot_url
from leasecheck.workloads.async_claim_loop import AsyncSlot, run_slots
from leasecheck.workloads.claim_loop import Slot
from leasecheck.workloads.leases.contract import is_async
from leasecheck.workloads.stall import Stall
from leasecheck.workloads.sink import Sink
from leasecheck.workloads.leases import load_lease, wants_url
from leasecheck.harness.stores.topology import needs_all_nodes
from leasecheck.events import LATE_SENT, SLOT_CRASH, WIRE_CONN, WORKER_END, WORKER_START
from leasecheck.rundir import RunFiles


ORPHAN_GRACE_S = 3.0


def main(argv: list[str]) -> int:
    run_dir, index = Path(argv[0]), int(argv[1])
    cfg = RunConfig.load(run_dir)
    stop = threading.Event()
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, lambda *_: stop.set())

    lease_cls = load_lease(cfg.lease)
    job_duration = parse_distribution(cfg.job_duration)
    retry_delay = parse_distribution(cfg.retry_delay)
    name = f"w{index}"
    history = HistoryWriter(RunFiles(run_dir).part(name), on_fail=lambda _e: stop.set())  # out of disk: stop
    out_lock = threading.Lock()

    def say(line: str) -> None:
        with out_lock:
            try:
                print(line, flush=True)
            except (BrokenPipeError, OSError):
                pass

    # Whom to aim `pause:holder` / `pause:releaser` at: a few bytes in shared memory per call.
    # (a replacement worker started after kill:holder has an index past cfg.workers: the board
    # the harness made has room for it, `argv[2]` workers' worth)
    board = SlotBoard(run_dir / SLOT_BOARD, int(argv[2]) if len(argv) > 2 else cfg.workers, cfg.slots)
    stall = Stall()
    asynchronous = is_async(lease_cls)
    slot_cls = AsyncSlot if asynchronous else Slot
    watch = HungWatch(history, cfg.call_bound_s, stops_of(slot_cls._call, _run_slot))
    per_slot = getattr(lease_cls, "for_slot", None)     # exec: a child process per slot
    # The wire path (one store): every slot's own port, forwarding to where its client connects.
    wire = None if needs_all_nodes(lease_cls) or cfg.topology == "replicated" else \
        Wire(cfg.store_host, cfg.client_port or cfg.store_port, on_conn=_conn_writer(history))
    slots, factories = [], []
    for s in range(cfg.slots):
        process = f"{name}.s{s}"
        tracker = SendTracker(process, on_late=_late_writer(history, process))
        if needs_all_nodes(lease_cls):
            client = _node_clients(cfg, tracker)
        elif cfg.topology == "replicated":
            client = make_sentinel_client(tracker, cfg.sentinel_ports, cfg.store_nodes, cfg.store_db,
                                          socket_timeout=cfg.client_timeout_s, retries=cfg.client_retries)
        else:
            port = wire.listen(tracker)
            client = make_client(tracker, cfg.store_host, cfg.client_port or cfg.store_port, cfg.store_db,
                                 socket_timeout=cfg.client_timeout_s, retries=cfg.client_retries, shown_port=port)
        # connect = "url": the lease builds its own client from its slot's URL (its own port on the
        # wire path); the audited client still serves the sink.
        handed = slot_url(port, cfg.store_db) if wants_url(lease_cls) else client
        factory = per_slot(process) if callable(per_slot) else lease_cls
        record = board.record(index * cfg.slots + s)
        tracker.on_sent = record.sent
        factories.append(factory)
        # the async loop's slots share one thread: the watch is told each call's task; a threaded
        # slot's calls the watch reads from its record on the board
        told = {"watch": watch} if asynchronous else {}
        slot = slot_cls(process=process, history=history, tracker=tracker, client=handed,
                        lease_factory=factory, keys=cfg.job_keys(), ttl_ms=cfg.ttl_ms,
                        job_duration=job_duration, retry_delay=retry_delay, seed=cfg.seed,
                        job_numbers=JobNumbers(run_dir / JOB_NUMBERS) if job_duration.block else None,
                        deadline_ns=int(cfg.time_limit_s * 1e9), stop=stop, record=record,
                        sink=Sink(client, cfg.run_id) if cfg.sink else None, stall=stall, **told)
        if not asynchronous:
            watch.follow(process, record, slot.current)
        slots.append(slot)

    if wire is not None:
        wire.start()
    print("ready", flush=True)
    line = sys.stdin.readline().split()
    if not line or line[0] != "go":
        history.close()
        return 0
    history.t0_ns = int(line[1])
    history.record(name, WORKER_START, pid=os.getpid())
    threading.Thread(target=_watch_stdin, args=(stop, history, name, say, stall), daemon=True).start()
    watch.start()
    if asynchronous:
        loop_thread, threads = run_slots(slots, stop)
        own = [loop_thread]
    else:
        threads = [threading.Thread(target=_run_slot, args=(slot,), name=slot.process) for slot in slots]
        for t in threads:
            t.start()
        own = threads
    left = _join_slots(threads, watch, stop, history, int(cfg.time_limit_s * 1e9))
    watch.close()
    if not left:
        for t in own:
            t.join()
    _join_lease_threads(own, (cfg.client_timeout_s or 5.0) + 1.0)
    _close(factories)
    if wire is not None:
        wire.close()
    history.record(name, WORKER_END, pid=os.getpid(), **({"reason": f"left hung: {', '.join(left)}"} if left else {}))
    history.close()
    code = writes.WORKER_EXIT if history.failed else 0   # the runner stops the run, keeping what is on disk
    if left:   # a hung slot's thread never ends, and the interpreter would wait for it at exit
        sys.stdout.flush()
        os._exit(code)
    return code


def _join_slots(threads: list[threading.Thread], watch: HungWatch, stop: threading.Event,
                history: HistoryWriter, deadline_ns: int) -> list[str]:
    """Wait for the slots to end; once the run's time is up (or the harness said stop), a slot
    inside a call already reported hung is left behind. Returns the slots left."""
    while True:
        alive = [t for t in threads if t.is_alive()]
        left_ns = deadline_ns - history.now()
        over = stop.is_set() or left_ns <= 0
        if all(over and watch.hung(t.name) for t in alive):
            return [t.name for t in alive]
        # Before the time is up nothing is left behind: wake at most once a second (a wake takes
        # the interpreter from a busy slot) until then, ten times a second after.
        alive[0].join(0.1 if over else min(1.0, max(0.1, left_ns / 1e9)))


def _close(factories: list) -> None:
    """End what a lease keeps per slot (an ``exec:`` lease's child process), all at once: each
    child is given a moment to exit after its stdin closes."""
    def close_one(close) -> None:
        try:
            close()
        except Exception:
            traceback.print_exc()

    closing = [threading.Thread(target=close_one, args=(f.close,), name="lease-close")
               for f in factories if callable(getattr(f, "close", None))]
    for t in closing:
        t.start()
    for t in closing:
        t.join()


def _node_clients(cfg: RunConfig, tracker: SendTracker) -> list:
    """One audited client per store node, in node order, for a lease declaring ``nodes = "all"``
    (a run of one node gives a list of one, its connections named as a single store's are)."""
    nodes = cfg.store_nodes or [{"name": "node1", "port": cfg.store_port, "client_port": cfg.client_port}]
    several = len(nodes) > 1
    return [make_client(tracker, cfg.store_host, n.get("client_port") or n["port"], cfg.store_db,
                        socket_timeout=cfg.client_timeout_s, retries=cfg.client_retries,
                        node=n["name"] if several else None) for n in nodes]


def _join_lease_threads(slots: list[threading.Thread], timeout_s: float) -> None:
    """Wait (at most ``timeout_s``) for the threads a lease library started and left running — a
    pool still sending a call's last commands after it returned — so those commands are written
    (``late_sent``) before the history closes. Daemon threads are the harness's own."""
    deadline = time.monotonic() + timeout_s
    for t in threading.enumerate():
        if t is threading.current_thread() or t.daemon or t in slots:
            continue
        t.join(max(0.0, deadline - time.monotonic()))


def _late_writer(history: HistoryWriter, process: str):
    """A command a lease's own thread sent after its call returned (``leasecheck.harness.record.connection``):
    recorded at once as ``late_sent`` of that call, so the checker credits it to the call that
    sent it rather than to the slot's next call."""
    def write(call, entry: list) -> None:
        history.record(process, LATE_SENT, f=call.f, attempt=call.attempt, key=call.key,
                       invoked=call.invoked, sent=[entry])
    return write


def _conn_writer(history: HistoryWriter):
    """A wire-path connection's name and upstream address, once its marker went upstream."""
    def write(process: str, conn: str, addr: str) -> None:
        history.record(process, WIRE_CONN, conn=conn, addr=addr)
    return write


def _run_slot(slot: Slot) -> None:
    try:
        slot.run()
    except BaseException as e:  # our own bug: leave a trace in the history and on stderr
        traceback.print_exc()
        slot.history.record(slot.process, SLOT_CRASH, error=f"{type(e).__name__}: {e}"[:300])


def _watch_stdin(stop: threading.Event, history: HistoryWriter, name: str, say, stall: Stall) -> None:
    """``stop`` from the harness: finish the current job and release. ``clock <token>``: answer
    with this process's wall clock (``time.time_ns()``, as libfaketime shows it to the lease), the
    probe of a ``clock:workers`` fault. ``hang <slot> <token>`` / ``unhang <slot>``: freeze and
    thaw that slot's job (``hang:holder``, ``leasecheck.workloads.stall``), answered ``hang <token>
    1|0`` (whether it was inside a job). Stdin closing without ``stop`` means the harness is gone
    (killed): stop too, but do not linger — with the store gone, a release can spend minutes in
    the client's retries — so after a short grace the history is flushed and the process exits."""
    for line in sys.stdin:
        words = line.split()
        if words == ["stop"]:
            stop.set()
            return
        if len(words) == 2 and words[0] == "clock":
            say(f"clock {words[1]} {time.time_ns()}")
        elif len(words) == 3 and words[0] == "hang":
            say(f"hang {words[2]} {int(stall.freeze(words[1]))}")
        elif len(words) == 2 and words[0] == "unhang":
            stall.thaw(words[1])
    stop.set()
    time.sleep(ORPHAN_GRACE_S)
    history.record(name, WORKER_END, pid=os.getpid(), reason="harness gone")
    history.close()
    os._exit(0)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
