"""The probes faults measure themselves with: a watched process state, the workers' answers."""
import os
import signal
import subprocess
import threading
import time

from leasecheck.harness.faults.watch import Watch
from leasecheck.harness.run.procfs import is_stopped, proc_state
from leasecheck.harness.run.replies import Replies


def test_a_watch_measures_how_long_a_process_really_was_stopped():
    child = subprocess.Popen(["sleep", "30"])
    try:
        running = Watch(lambda: is_stopped(child.pid)).start()
        time.sleep(0.2)
        assert running.stop() == 0.0 and running.samples >= 3
        os.kill(child.pid, signal.SIGSTOP)
        deadline = time.monotonic() + 2      # the signal is delivered asynchronously
        while not is_stopped(child.pid) and time.monotonic() < deadline:
            time.sleep(0.001)
        stopped = Watch(lambda: is_stopped(child.pid)).start()
        time.sleep(0.5)
        span = stopped.stop()
        assert proc_state(child.pid) == "T"
        assert 0.4 <= span <= 0.6 and stopped.held == stopped.samples
    finally:
        os.kill(child.pid, signal.SIGCONT)
        child.kill()
        child.wait()
    assert proc_state(child.pid) is None


def test_a_watch_keeps_the_longest_unbroken_span():
    flips = iter([True] * 5 + [False] + [True] * 10 + [False] * 1000)
    w = Watch(lambda: next(flips), period_s=0.01).start()
    time.sleep(0.4)
    span = w.stop()
    assert 0.07 <= span <= 0.2          # ten samples 10 ms apart, not the first five


def test_replies_wait_for_the_tokens_asked_and_ignore_other_lines():
    r = Replies()
    assert r.put("hold w1.s0", 1) is False                  # the holders' lines are not answers
    threading.Timer(0.05, lambda: r.put("clock w0.ab 123", 456)).start()
    assert r.wait(["w0.ab"], 2.0) == {"w0.ab": (123, 456)}
    t = time.monotonic()
    assert r.wait(["w1.cd"], 0.1) == {}                    # a stopped worker does not answer
    assert time.monotonic() - t < 0.5
