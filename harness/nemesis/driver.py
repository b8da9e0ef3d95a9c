"""The nemesis: runs a schedule of faults against a live run, records each in the history, and
heals every fault it started — at its end, when the run stops early, and if its own code raises.

A schedule is a list of ``Step``s. ``random_schedule`` draws one from the seed (Jepsen-like: a
fault about every ``interval`` seconds, each healed before the next starts); a scenario file
gives one explicitly; ``--replay`` reuses a past run's ``schedule.json``. The schedule is saved
in the run directory before the run starts.

Each fault appears in the history as ``fault_start`` (fault, target, requested) and
``fault_end`` (the same, plus what was measured), or, if its time never came (the run ended
first) or the nemesis failed before it, as ``fault_not_fired`` (fault, target, at, why); and in
every store node's audit as
``ECHO leasecheck:fault:<n>:<fault>:start`` / ``:end`` markers where the store can answer
(the checker reads the eviction windows from them).
"""
from __future__ import annotations

import random
import threading
import time
import traceback

import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

from leasecheck.harness.faults import FAULTS, FaultContext, Step
from leasecheck.harness.record.own import harness_client
from leasecheck.events import FAULT_END, FAULT_NOT_FIRED, FAULT_START, NEMESIS
from leasecheck.protocol import fault_marker


def random_schedule(faults: list[tuple], cfg, rng: random.Random, interval_s: float) -> list[Step]:
    """Draw steps from ``faults`` ((name, target[, option]) as ``nemesis_entries`` gives them)
    until the next one would not end 0.2 s before the time limit: a drawn step always fits in
    the run, so it can fire and be healed by its own end (none is drawn to be dropped)."""
    steps: list[Step] = []
    t = min(interval_s / 2, cfg.time_limit_s / 4)
    while True:
        name, target, *rest = rng.choice(faults)
        option = rest[0] if rest else None
        fault = FAULTS[name]
        gap = interval_s * rng.uniform(0.8, 1.2)
        if fault.lasts_ttls:
            duration = rng.uniform(0.5, 3.0) * cfg.ttl_s
        else:
            duration = max(2 * cfg.ttl_s, 0.5 * gap)
        duration = min(duration, 0.8 * gap)
        if t + duration > cfg.time_limit_s - 0.2:
            break
        size = fault.default_size(cfg, rng, target, option)
        steps.append(Step(round(t, 3), name, target, round(duration, 3), size, fault.drawn_params(target, size)))
        t += max(gap, duration + 0.1)
    return steps


class Nemesis:
    def __init__(self, ctx: FaultContext, steps: list[Step], history, t0_ns: int, in_turn: bool = False):
        """``in_turn``: one fault at a time (a drawn schedule promises it): a step whose time
        comes while another is still in place starts when that one has been healed."""
        self.ctx, self.steps, self.history, self.t0_ns = ctx, steps, history, t0_ns
        ctx.record = lambda type_, **fields: history.record(NEMESIS, type_, **fields)
        self.in_turn = in_turn
        self._stop = threading.Event()     # the run ends, or the nemesis failed: heal, start nothing
        self._lock = threading.Lock()
        self._done: list[threading.Event] = []
        self._thread = threading.Thread(target=self._run, name="nemesis", daemon=True)
        self.error: str | None = None
        self._why_stopped = "the run ended"
        # Markers go to every node's audit, on connections of their own (never a fault's).
        self._markers = [harness_client(node.store.host, node.store.port, "nemesis", db=ctx.cfg.store_db,
                                        socket_timeout=0.5, retry=Retry(NoBackoff(), 0))
                         for node in ctx.nodes if node.store.port]

    def start(self) -> None:
        self._thread.start()

    def stop(self, reason: str = "") -> None:
        """Stop scheduling, heal what is active, record the steps whose time never came, and
        wait for the thread. ``reason``: why the run ended (``time-limit``, ``interrupted``...)."""
        if reason:
            self._why_stopped = f"the run ended ({reason})"
        self._stop.set()
        self._thread.join(30)

    def _now_s(self) -> float:
        return (time.monotonic_ns() - self.t0_ns) / 1e9

    def _run(self) -> None:
        """Play every step in a thread of its own, so a step that waits (a pause looking for its
        holder, a probe timing out through a partition) never holds up another step's end.
        Steps may overlap (a scenario can pause the holder while the store's clock is skewed)
        unless ``in_turn``. A step lasts ``duration`` from when its fault is in place (the
        probes that measure a fault run while it is in place and do not lengthen it)."""
        self._done = [threading.Event() for _ in self.steps]
        players = [threading.Thread(target=self._play, args=(n,), name=f"nemesis-{n}", daemon=True)
                   for n in range(len(self.steps))]
        for t in players:
            t.start()
        for t in players:
            t.join()

    def _play(self, n: int) -> None:
        step = self.steps[n]
        try:
            before = self._previous_in_turn(n)
            if before is not None:          # after the previous fault's heal (or its miss)
                while not self._done[before].wait(0.05) and not self._stop.is_set():
                    pass
            if self._stop.wait(max(0.0, step.at - self._now_s())):
                self._not_fired(n, step)
                return
            try:
                act = self._begin(n, step)
            except Exception:
                with self._lock:
                    self.error = self.error or traceback.format_exc()
                self._stop.set()            # a nemesis that failed injects nothing more
                return
            self._stop.wait(max(0.0, self._in_place_s(act) + step.duration - self._now_s()))
            self._end(n, step, act)
        finally:
            self._done[n].set()

    def _previous_in_turn(self, n: int) -> int | None:
        """The step ``n`` waits for when faults play in turn: the last earlier step that is not
        in the background (``params["background"]``: a named mix's late replies, in place the
        whole run while the other faults take turns); None when it waits for none."""
        if not self.in_turn or self.steps[n].params.get("background"):
            return None
        return next((k for k in range(n - 1, -1, -1) if not self.steps[k].params.get("background")), None)

    def _in_place_s(self, act) -> float:
        """Run seconds when the fault took hold (``Active.started``), or now."""
        started = getattr(act, "started", None)
        return (started - self.t0_ns / 1e9) if started is not None else self._now_s()

    def _begin(self, n: int, step: Step):
        self._mark(n, step, "start")
        requested = {"duration_s": step.duration, "size": step.size, **step.params}
        # In a replicated run the node is chosen now (`primary`, `replica`, and `store`/`workers`:
        # the primary) and kept from start to heal, even if the roles change meanwhile (a failover).
        pinned, role = self.ctx.pin(step, FAULTS[step.fault])
        self.history.record(NEMESIS, FAULT_START, fault=step.fault, target=step.target,
                            n=n, requested=requested, **role)
        try:
            return FAULTS[step.fault].start(self.ctx, pinned)
        except Exception as e:
            self.history.record(NEMESIS, FAULT_END, fault=step.fault, target=step.target, n=n,
                                measured={"error": f"{type(e).__name__}: {e}"[:300]})
            raise

    def _not_fired(self, n: int, step: Step) -> None:
        why = ("the nemesis failed before its time" if self.error else
               f"{self._why_stopped} at {self._now_s():.2f} s, before its start")
        self.history.record(NEMESIS, FAULT_NOT_FIRED, fault=step.fault, target=step.target,
                            n=n, at=step.at, why=why)

    def _end(self, n: int, step: Step, act) -> None:
        measured = {}
        try:
            if act is not None:
                measured = FAULTS[step.fault].stop(self.ctx, act)
        except Exception:
            with self._lock:
                self.error = self.error or traceback.format_exc()
        finally:
            for ident in getattr(act, "ledger_ids", []):
                self.ctx.ledger.heal(ident)  # whatever stop() did not undo
            self.history.record(NEMESIS, FAULT_END, fault=step.fault, target=step.target,
                                n=n, measured=measured)
            self._mark(n, step, "end")

    def _mark(self, n: int, step: Step, what: str) -> None:
        for marker in self._markers:
            try:
                marker.echo(fault_marker(n, step.fault, what))
            except redis.RedisError:
                pass  # the store is paused or down: the history still has the event
