"""Commands a lease's own threads send after its call returned: credited to the call that sent
them (``late_sent``), never to the slot's next call; commands outside any call wait for the next
drain as before. The pottery adapter's pool runs its tasks in the caller's context."""
import threading

from leasecheck.harness.record.connection import SendTracker
from leasecheck.harness.run.worker import _join_lease_threads
from leasecheck.workloads.leases.pottery_redlock import _CallContextExecutor


def _tracker():
    late = []
    tracker = SendTracker("w0.s0", on_late=lambda call, entry: late.append((call.attempt, call.f, call.invoked, entry)))
    return tracker, late


def test_a_command_sent_by_the_calls_pool_after_it_returned_is_late_and_its_own():
    tracker, late = _tracker()
    go = threading.Event()
    pool = _CallContextExecutor()
    tracker.begin("w0.s0.0", "acquire", "k", 100)
    pool.submit(tracker.add, ["c0@node1", 0, "SET"]).result()              # answered before the call returned
    straggler = pool.submit(lambda: (go.wait(5), tracker.add(["c1@node2", 0, "SET"])))
    assert tracker.drain() == [["c0@node1", 0, "SET"]]                    # the acquire's completion
    tracker.add(["c2@node1", 1, "EVALSHA"])                                # the slot's own thread, between calls
    tracker.begin("w0.s0.0", "release", "k", 200)
    go.set()
    straggler.result()
    assert late == [("w0.s0.0", "acquire", 100, ["c1@node2", 0, "SET"])]
    assert tracker.drain() == [["c2@node1", 1, "EVALSHA"]]                # not the acquire's straggler
    pool.shutdown()


def test_without_a_call_context_commands_wait_for_the_next_drain():
    tracker, late = _tracker()
    plain = threading.Thread(target=tracker.add, args=(["c0", 0, "SET"],))   # a thread of its own: no call
    tracker.begin("w0.s0.1", "acquire", "k", 300)
    tracker.drain()
    plain.start()
    plain.join()
    assert late == [] and tracker.drain() == [["c0", 0, "SET"]]


def test_the_worker_waits_for_a_lease_librarys_threads_before_closing_its_history():
    done = []
    straggler = threading.Thread(target=lambda: (threading.Event().wait(0.2), done.append("late")))
    forever = threading.Thread(target=threading.Event().wait, daemon=True)      # the harness's own kind
    straggler.start()
    forever.start()
    _join_lease_threads([], timeout_s=5)
    assert done == ["late"] and forever.is_alive()
