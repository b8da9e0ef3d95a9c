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
