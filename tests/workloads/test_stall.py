"""hang:holder's worker side: a frozen slot's job makes no progress while its renewals go on."""
import threading
import time

from leasecheck.workloads.stall import Stall


def test_freeze_says_whether_the_slot_was_in_a_job_and_cuts_its_sleep_short():
    stall = Stall()
    assert stall.freeze("w0.s0") is False            # not in a job: nothing held to hang
    stall.thaw("w0.s0")
    stall.job("w0.s0", True)
    woke = []

    def job_sleep():
        t = time.monotonic()
        stall.sleep("w0.s0", 30.0)
        woke.append(time.monotonic() - t)

    sleeper = threading.Thread(target=job_sleep)
    sleeper.start()
    time.sleep(0.05)
    assert stall.freeze("w0.s0") is True and stall.frozen("w0.s0")
    sleeper.join(5)
    assert woke and woke[0] < 5                       # woken by the freeze, not by its 30 s
    stall.thaw("w0.s0")
    assert not stall.frozen("w0.s0")
    stall.job("w0.s0", False)
    assert stall.freeze("w0.s0") is False


def _slot(stall, events):
    from types import SimpleNamespace

    from leasecheck.harness.record.connection import SendTracker
    from leasecheck.harness.settings.durations import parse_distribution
    from leasecheck.workloads.claim_loop import Slot

    class Lease:
        def __init__(self, *_):
            pass

        def acquire(self):
            return True

        def release(self):
            return True

    history = SimpleNamespace(record=lambda process, type, **f: events.append({"type": type, **f}) or len(events),
                              now=lambda: 0)
    return Slot(process="w0.s0", history=history, tracker=SendTracker("w0.s0"), client=None, lease_factory=Lease,
                keys=["k"], ttl_ms=1000, job_duration=parse_distribution("0s"),
                retry_delay=SimpleNamespace(sample=lambda r: 0.0), seed=1, deadline_ns=1, stop=threading.Event(),
                stall=stall)


def test_a_job_of_no_duration_runs_at_once_unless_its_slot_is_frozen():
    import random

    stall, events = Stall(), []
    slot = _slot(stall, events)
    slot._attempt("w0.s0.0", "k", lambda _jobs: 0.0, random.Random(0))
    job = [(e["type"], e.get("aborted")) for e in events if e["type"] in ("job_start", "effect", "job_end")]
    assert job == [("job_start", None), ("effect", None), ("job_end", False)]
    assert events[-1]["type"] == "ok" and events[-1]["f"] == "release"
    assert stall.freeze("w0.s0") is False             # the job is over: not inside one
    # frozen before its next job: that job makes no progress until thawed, however short
    events.clear()
    runner = threading.Thread(target=slot._attempt, args=("w0.s0.1", "k", lambda _jobs: 0.0, random.Random(0)))
    runner.start()
    time.sleep(0.3)
    assert [e["type"] for e in events] == ["invoke", "ok", "job_start"]
    stall.thaw("w0.s0")
    runner.join(5)
    assert [e["type"] for e in events][2:] == ["job_start", "effect", "job_end", "invoke", "ok"]
