"""The asyncio claim loop: every slot a task on one event loop in one thread; each call recorded
as the threaded loop records it (an invocation, then ok/fail/info); slots interleave (one slot's
job never holds up another's calls); renewal every TTL/3 while a job runs; a stop ends a back-off
at once; the worker's handles see a slot end. No store: an in-memory asynchronous lease."""
import asyncio
import threading
import time

from leasecheck.events import FAIL, INFO, INVOKE, JOB_END, JOB_START, OK
from leasecheck.harness.record.connection import SendTracker
from leasecheck.harness.settings.durations import parse_distribution
from leasecheck.workloads.async_claim_loop import AsyncSlot, run_slots


class Recorder:
    """Stands for the worker's HistoryWriter: events in order, with the thread that wrote each."""

    def __init__(self):
        self.t0 = time.monotonic_ns()
        self.events = []
        self.lock = threading.Lock()

    def now(self):
        return time.monotonic_ns() - self.t0

    def record(self, process, type, **fields):
        with self.lock:
            t = self.now()
            self.events.append((t, process, type, fields, threading.get_ident()))
            return t


HELD: dict = {}


class MemoryLease:
    connect = "url"

    def __init__(self, url, key, ttl_ms):
        self.url, self.key, self.token = url, key, object()

    async def acquire(self):
        await asyncio.sleep(0.001)
        if self.key in HELD:
            return False
        HELD[self.key] = self.token
        return True

    async def release(self):
        await asyncio.sleep(0.001)
        return HELD.pop(self.key, None) is self.token


class RenewingLease(MemoryLease):
    renewals: list = []

    async def renew(self):
        RenewingLease.renewals.append(time.monotonic())
        return True


class RenewingOnceLease(RenewingLease):
    """Stops the run once its first release is done: one job, however late a loaded machine
    starts the loop (a run deadline of 0.1 s once passed before the first acquire)."""
    stop: threading.Event

    async def release(self):
        done = await super().release()
        RenewingOnceLease.stop.set()
        return done


class RaisingLease(MemoryLease):
    async def acquire(self):
        raise ConnectionError("store gone")


def slots(history, stop, n, lease, *, keys=None, ttl_ms=1000, job="0.2s", retry="10ms", limit_s=1.0):
    return [AsyncSlot(process=f"w0.s{i}", history=history, tracker=SendTracker(f"w0.s{i}"),
                      client="redis://127.0.0.1:1/0", lease_factory=lease, keys=keys or [f"job:{i}"],
                      ttl_ms=ttl_ms, job_duration=parse_distribution(job), retry_delay=parse_distribution(retry),
                      seed=7, deadline_ns=history.now() + int(limit_s * 1e9), stop=stop) for i in range(n)]


def run(history, ss, stop, wait_s=30):
    thread, handles = run_slots(ss, stop)
    thread.join(wait_s)
    assert not thread.is_alive()
    assert all(not h.is_alive() for h in handles) and [h.name for h in handles] == [s.process for s in ss]
    return handles


def calls(history, process):
    return [(k, f.get("f")) for _, p, k, f, _ in history.events if p == process and k in (INVOKE, OK, FAIL, INFO)]


def test_n_slots_are_n_tasks_on_one_thread_and_their_jobs_overlap_in_time():
    HELD.clear()
    history, stop = Recorder(), threading.Event()
    ss = slots(history, stop, 4, MemoryLease, job="0.3s", limit_s=0.5)
    run(history, ss, stop)
    threads = {tid for *_, tid in history.events}
    assert len(threads) == 1 and threads != {threading.get_ident()}      # one loop thread, not ours
    starts = {p: t for t, p, k, f, _ in history.events if k == JOB_START}
    ends = {p: t for t, p, k, f, _ in history.events if k == JOB_END}
    assert len(starts) == 4
    # every slot's first job started before any slot's first job ended: the four ran at once
    assert max(starts.values()) < min(ends.values())
    for s in ss:
        seq = calls(history, s.process)
        assert seq[:4] == [(INVOKE, "acquire"), (OK, "acquire"), (INVOKE, "release"), (OK, "release")]
        assert all(a[0] == INVOKE and b[0] in (OK, FAIL, INFO) and a[1] == b[1] for a, b in zip(seq[::2], seq[1::2]))


def test_contention_on_one_key_gives_fails_and_each_attempt_is_numbered():
    HELD.clear()
    history, stop = Recorder(), threading.Event()
    ss = slots(history, stop, 3, MemoryLease, keys=["job:0"], job="50ms", retry="5ms", limit_s=0.6)
    run(history, ss, stop)
    kinds = [k for _, p, k, f, _ in history.events if f.get("f") == "acquire" and k != INVOKE]
    assert kinds.count(OK) >= 3 and kinds.count(FAIL) >= 3
    attempts = [f["attempt"] for _, p, k, f, _ in history.events if k == INVOKE and p == "w0.s1" and f["f"] == "acquire"]
    assert attempts == [f"w0.s1.{i}" for i in range(len(attempts))]
    # never two holders at once: a release completes before the next acquire wins
    holder = None
    for _, p, k, f, _ in history.events:
        if f.get("f") == "acquire" and k == OK:
            assert holder is None
            holder = p
        if f.get("f") == "release" and k == INVOKE:
            holder = None


def test_a_job_is_renewed_every_third_of_the_ttl():
    HELD.clear()
    RenewingLease.renewals = []
    history, stop = Recorder(), threading.Event()
    RenewingOnceLease.stop = stop
    ss = slots(history, stop, 1, RenewingOnceLease, ttl_ms=300, job="0.55s", limit_s=30)
    run(history, ss, stop)
    renews = [t for t, p, k, f, _ in history.events if k == INVOKE and f.get("f") == "renew"]
    start = next(t for t, p, k, f, _ in history.events if k == JOB_START)
    end = next(t for t, p, k, f, _ in history.events if k == JOB_END)
    period = 0.1e9
    # the k-th renewal is due k periods after the job began (never earlier: the loop's timer may
    # fire a clock tick early, 2 ms allowed), and every one due before the job's end was made
    assert len(renews) == int((end - start) // period) or len(renews) == int((end - start) // period) + 1
    assert len(renews) >= 5
    assert all(t - start >= (k + 1) * period - 2e6 for k, t in enumerate(renews))


def test_a_call_that_raises_is_an_info_completion_with_the_error():
    history, stop = Recorder(), threading.Event()
    ss = slots(history, stop, 1, RaisingLease, limit_s=0.1)
    run(history, ss, stop)
    infos = [f for _, p, k, f, _ in history.events if k == INFO]
    assert infos and infos[0]["error"] == "ConnectionError: store gone" and infos[0]["f"] == "acquire"


def test_stop_ends_a_back_off_at_once():
    HELD.clear()
    HELD["job:0"] = "someone else's"          # every acquire fails, then backs off for 60 s
    history, stop = Recorder(), threading.Event()
    ss = slots(history, stop, 2, MemoryLease, keys=["job:0"], retry="60s", limit_s=120)
    thread, handles = run_slots(ss, stop)
    deadline = time.monotonic() + 10
    while sum(k == FAIL for _, p, k, f, _ in history.events) < 2 and time.monotonic() < deadline:
        time.sleep(0.01)
    t = time.monotonic()
    stop.set()
    thread.join(10)
    assert not thread.is_alive() and time.monotonic() - t < 5     # not 60 s
    assert all(not h.is_alive() for h in handles)
    HELD.clear()
