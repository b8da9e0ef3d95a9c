"""Commands a slot's connections carry between two calls (docs/history.md, "Commands between
calls"): within an attempt they go to its next call; after its last call, to that attempt."""
import random
import threading
from types import SimpleNamespace

from leasecheck.checkers.model.join import Joiner
from leasecheck.checkers.read.audit import parse_audit
from leasecheck.checkers.read.ops import Pairer
from leasecheck.harness.record.connection import SendTracker
from leasecheck.harness.settings.durations import parse_distribution
from leasecheck.workloads.claim_loop import Slot


def _slot(tracker, events, lease):
    history = SimpleNamespace(record=lambda process, type, **f: events.append({"type": type, **f}) or len(events),
                              now=lambda: 0)
    return Slot(process="w0.s0", history=history, tracker=tracker, client=None, lease_factory=lease,
                keys=["k"], ttl_ms=1000, job_duration=parse_distribution("0s"),
                retry_delay=SimpleNamespace(sample=lambda r: 0.0), seed=1, deadline_ns=1, stop=threading.Event())


def test_a_command_after_an_attempts_last_call_is_credited_to_that_attempt():
    tracker, events = SendTracker("w0.s0"), []

    class Lease:
        def __init__(self, *_):
            tracker.add(["w0.s0.c0", len(events), "PING"])       # the constructor's: its first call's

        def acquire(self):
            return True

        def release(self):
            return True

    slot = _slot(tracker, events, Lease)
    slot._attempt("w0.s0.0", "k", lambda _jobs: 0.0, random.Random(0))
    # a library's clean-up thread (no call context) sends after the release returned
    t = threading.Thread(target=tracker.add, args=(["w0.s0.c0", 99, "DEL"],))
    t.start()
    t.join()
    slot._attempt("w0.s0.1", "k", lambda _jobs: 0.0, random.Random(0))
    late = [e for e in events if e["type"] == "late_sent"]
    assert [(e["attempt"], e["f"], e["sent"]) for e in late] == [("w0.s0.0", "release", [["w0.s0.c0", 99, "DEL"]])]
    second = next(e for e in events if e["type"] == "ok" and e["attempt"] == "w0.s0.1" and e["f"] == "acquire")
    assert [s[2] for s in second["sent"]] == ["PING"]                # its own constructor's, no DEL
    # the slot's last attempt: credited when the loop ends
    tracker.add(["w0.s0.c0", 100, "DEL"])
    slot.stop.set()
    slot.run()                                   # stopped: no attempt, only the credit
    assert events[-1]["type"] == "late_sent" and events[-1]["attempt"] == "w0.s0.1"


def test_the_checker_credits_a_late_command_to_its_attempt():
    joiner = Joiner()
    pairer = Pairer(joiner.add, keep=False, on_late=joiner.add)
    for e in ({"type": "invoke", "f": "release", "attempt": "w0.s0.0", "key": "k", "time": 10},
              {"type": "ok", "f": "release", "attempt": "w0.s0.0", "key": "k", "time": 11, "value": True,
               "sent": [["w0.s0.c0", 0, "EVAL"]]},
              {"type": "late_sent", "f": "release", "attempt": "w0.s0.0", "key": "k", "time": 20, "invoked": 10,
               "sent": [["w0.s0.c0", 1, "DEL"]]}):
        pairer.feed(e)
    joiner.history_done([])
    audit = parse_audit('OK\n1.0 [0 a:1] "ECHO" "leasecheck:conn:w0.s0.c0"\n1.1 [0 a:1] "EVAL" "x" "1" "k"\n'
                        '1.2 [0 a:1] "DEL" "k"\n# end\n')[0]
    got = [joiner.feed(rec)[0] for rec in audit]
    assert got == [None, "w0.s0.0", "w0.s0.0"]
    out = joiner.finish(True)
    assert out.disagreements == [] and out.unattributed == 0 and pairer.count == 2
