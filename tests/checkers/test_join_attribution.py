"""Attribution of audit lines to attempts: markers, seq numbering, scripts, mismatches."""
import json
from pathlib import Path

from leasecheck.checkers import load_audit, load_history
from leasecheck.checkers.read.audit import parse_audit
from leasecheck.checkers.model.join import join
from leasecheck.checkers.read.ops import pair_ops

DATA = Path(__file__).parent / "data"


def call(t, attempt, f, kind, value=None, sent=()):
    """An invoke and its completion for a lease call on key k."""
    slot = attempt.rsplit(".", 1)[0]
    done = {"time": t + 1, "process": slot, "type": kind, "f": f, "attempt": attempt, "key": "k",
            "sent": [list(s) for s in sent]}
    done |= {"value": value} if kind != "info" else {"error": "timeout"}
    return [{"time": t, "process": slot, "type": "invoke", "f": f, "attempt": attempt, "key": "k"}, done]


def audit(*lines, end=True):
    return parse_audit("OK\n" + "".join(l + "\n" for l in lines) + ("# end\n" if end else ""))


def line(t, addr, *args):
    return f"{t:.6f} [0 {addr}] " + " ".join(json.dumps(a) for a in args)


def joined(records_complete, events):
    records, complete, _ = records_complete
    ops, _ = pair_ops(events)
    return records, ops, join(records, ops, complete)


def test_late_command_from_old_address_goes_to_its_own_attempt():
    records, ops, j = joined(load_audit(DATA / "stale-reconnect-bad"),
                             load_history(DATA / "stale-reconnect-bad")[0])
    late_del = next(i for i, r in enumerate(records) if r.name == "DEL" and r.time > 1795951566.9)
    new_set = next(i for i, r in enumerate(records) if r.argv[1:2] == ["lc:t1:job:1"])
    assert records[late_del].line > records[new_set].line           # it landed after the reconnect
    assert j.attempt[late_del] == "w0.s0.0" and ops[j.op[late_del]].type == "info"
    assert j.attempt[new_set] == "w0.s0.1"
    assert j.disagreements == [] and j.unattributed == 0


def test_script_lines_belong_to_their_eval():
    records, ops, j = joined(load_audit(DATA / "incident-token-cas-ok"), load_history(DATA / "incident-token-cas-ok")[0])
    for i, r in enumerate(records):
        if r.addr == "lua":
            evals = [k for k in range(i) if records[k].name == "EVAL"]
            assert j.attempt[i] == j.attempt[evals[-1]] is not None


def test_unannounced_addresses_are_unattributed_and_markers_not_counted():
    events = call(10, "w0.s0.0", "acquire", "ok", True, [("w0.s0.c0", 0, "SET")])
    records, ops, j = joined(audit(line(1.0, "a:1", "ECHO", "leasecheck:conn:w0.s0.c0"),
                                   line(1.1, "admin:9", "SET", "k", "x"),
                                   line(1.2, "a:1", "SET", "k", "t", "NX"),
                                   line(1.3, "admin:9", "ECHO", "leasecheck:audit-end")), events)
    assert j.attempt == [None, None, "w0.s0.0", None]
    assert j.unattributed == 1 and j.disagreements == []


def test_rebinding_an_address_restarts_the_numbering():
    events = (call(10, "w0.s0.0", "acquire", "ok", True, [("w0.s0.c0", 0, "SET")])
              + call(20, "w1.s0.0", "acquire", "ok", True, [("w1.s0.c4", 0, "SET")]))
    records, ops, j = joined(audit(line(1.0, "a:1", "ECHO", "leasecheck:conn:w0.s0.c0"),
                                   line(1.1, "a:1", "SET", "k", "t", "NX"),
                                   line(1.2, "a:1", "ECHO", "leasecheck:conn:w1.s0.c4"),
                                   line(1.3, "a:1", "SET", "k", "u", "NX")), events)
    assert j.attempt == [None, "w0.s0.0", None, "w1.s0.0"]


def test_command_name_mismatch_is_a_disagreement_not_an_attribution():
    events = call(10, "w0.s0.0", "release", "ok", True, [("w0.s0.c0", 0, "EVAL")])
    records, ops, j = joined(audit(line(1.0, "a:1", "ECHO", "leasecheck:conn:w0.s0.c0"),
                                   line(1.1, "a:1", "DEL", "k")), events)
    assert j.attempt == [None, None] and j.mismatches == 1
    assert any("is DEL in the audit but EVAL in the history" in d for d in j.disagreements)
    assert j.uncovered(ops, complete=True) == [0]


def test_missing_commands_in_a_complete_audit():
    events = (call(10, "w0.s0.0", "acquire", "ok", True, [("w0.s0.c0", 0, "SET")])
              + call(20, "w0.s0.0", "release", "info", sent=[("w0.s0.c0", 1, "DEL")]))
    records, ops, j = joined(audit(line(1.0, "a:1", "ECHO", "leasecheck:conn:w0.s0.c0")), events)
    assert len(j.disagreements) == 1 and "acquire (ok) sent w0.s0.c0 seq 0 SET" in j.disagreements[0]
    assert j.uncovered(ops, complete=True) == [0]        # the info call simply never ran
    assert j.uncovered(ops, complete=False) == [0, 1]


def test_null_seq_entries_are_not_numbered():
    events = call(10, "w0.s0.0", "acquire", "ok", True, [("w0.s0.c0", None, "CLIENT"), ("w0.s0.c0", 0, "SET")])
    records, ops, j = joined(audit(line(1.0, "a:1", "ECHO", "leasecheck:conn:w0.s0.c0"),
                                   line(1.1, "a:1", "SET", "k", "t", "NX")), events)
    assert j.attempt[1] == "w0.s0.0" and not j.missing


def hello(t, addr):
    return line(t, addr, "HELLO", "3")


def marker(t, addr, conn):
    return line(t, addr, "ECHO", f"leasecheck:conn:{conn}")


def test_a_handshake_on_a_reused_client_port_is_the_new_connections():
    # redis-py's HELLO reaches the store before the marker; the second connection got the first
    # one's client port, so its HELLO comes from an address still bound to the first connection
    events = (call(10, "w0.s0.0", "acquire", "ok", True, [("w0.s0.c0", 0, "SET")])
              + call(20, "w0.s0.1", "acquire", "ok", True, [("w0.s0.c1", 0, "SET")]))
    records, ops, j = joined(audit(hello(1.0, "a:1"), marker(1.1, "a:1", "w0.s0.c0"),
                                   line(1.2, "a:1", "SET", "k", "t", "NX"),
                                   hello(2.0, "a:1"), marker(2.1, "a:1", "w0.s0.c1"),
                                   line(2.2, "a:1", "SET", "k", "u", "NX")), events)
    assert j.disagreements == [] and j.problems == [] and j.missing == {}
    assert j.attempt == [None, None, "w0.s0.0", None, None, "w0.s0.1"]
    assert j.unattributed == 0 and j.handshakes == 2


def test_the_whole_handshake_goes_to_the_next_connection_and_a_numbered_select_stays():
    # the first connection's own SELECT (numbered seq 1) is its; the second one's handshake
    # (HELLO, AUTH redacted, SELECT of its db, a health check's PING) is the second's
    events = (call(10, "w0.s0.0", "acquire", "ok", True, [("w0.s0.c0", 0, "SET"), ("w0.s0.c0", 1, "SELECT")])
              + call(20, "w0.s0.1", "acquire", "ok", True, [("w0.s0.c1", 0, "SET")]))
    records, ops, j = joined(audit(marker(1.1, "a:1", "w0.s0.c0"),
                                   line(1.2, "a:1", "SET", "k", "t", "NX"),
                                   line(1.3, "a:1", "SELECT", "2"),
                                   hello(2.0, "a:1"), line(2.01, "a:1", "AUTH", "(redacted)"),
                                   line(2.02, "a:1", "SELECT", "2"), line(2.03, "a:1", "PING"),
                                   marker(2.1, "a:1", "w0.s0.c1"),
                                   line(2.2, "a:1", "SET", "k", "u", "NX")), events)
    assert j.disagreements == [] and j.unattributed == 0 and j.handshakes == 4
    assert j.attempt == [None, "w0.s0.0", "w0.s0.0", None, None, None, None, None, "w0.s0.1"]


def test_a_hello_no_marker_follows_is_unattributed_and_takes_no_number():
    # the harness's own connection (no marker ever), and a lease's own HELLO on its connection
    # (sent with seq null: HELLO is never numbered): neither is a disagreement
    events = call(10, "w0.s0.0", "acquire", "ok", True,
                  [("w0.s0.c0", 0, "SET"), ("w0.s0.c0", None, "HELLO"), ("w0.s0.c0", 1, "GET")])
    records, ops, j = joined(audit(hello(1.0, "admin:9"), line(1.01, "admin:9", "TIME"),
                                   marker(1.1, "a:1", "w0.s0.c0"),
                                   line(1.2, "a:1", "SET", "k", "t", "NX"),
                                   hello(1.3, "a:1"), line(1.4, "a:1", "GET", "k")), events)
    assert j.disagreements == [] and j.missing == {} and j.handshakes == 0
    assert j.attempt == [None, None, None, "w0.s0.0", None, "w0.s0.0"]
    assert j.unattributed == 3        # admin's HELLO and TIME, the lease's own HELLO


def test_a_held_select_no_marker_follows_is_judged_as_before():
    # a SELECT the connection did not number, with no marker after it: judged when the next
    # line comes, as without the handshake rule (it takes seq 1, which the history says is GET)
    events = call(10, "w0.s0.0", "acquire", "ok", True, [("w0.s0.c0", 0, "SET"), ("w0.s0.c0", 1, "GET")])
    records, ops, j = joined(audit(marker(1.1, "a:1", "w0.s0.c0"),
                                   line(1.2, "a:1", "SET", "k", "t", "NX"),
                                   line(1.3, "a:1", "SELECT", "2"), line(1.4, "a:1", "GET", "k")), events)
    assert j.handshakes == 0 and j.mismatches == 1
    assert any("seq 1 is SELECT in the audit but GET in the history" in d for d in j.disagreements)
    assert any("GET from w0.s0.c0 seq 2 is in no sent list" in d for d in j.disagreements)


def test_a_held_handshake_is_judged_at_the_end_of_the_audit():
    events = call(10, "w0.s0.0", "acquire", "ok", True, [("w0.s0.c0", 0, "SET")])
    records, ops, j = joined(audit(marker(1.1, "a:1", "w0.s0.c0"),
                                   line(1.2, "a:1", "SET", "k", "t", "NX"), hello(2.0, "a:2")), events)
    assert j.disagreements == [] and j.unattributed == 1 and j.handshakes == 0


def test_a_harness_connection_on_a_worker_connections_old_port_takes_none_of_its_numbers():
    # a fault's probe through the proxy got the client port a worker connection had given up a
    # moment before (a partition closed it): its marker frees the address, and its PINGs are
    # the harness's, not commands 1, 2, 3 of the worker connection
    events = call(10, "w0.s0.0", "acquire", "ok", True, [("w0.s0.c0", 0, "SET")])
    probe = [line(2.0, "a:1", "ECHO", "leasecheck:harness:probe")] + [line(2.1 + i / 10, "a:1", "PING")
                                                                      for i in range(3)]
    records, ops, j = joined(audit(marker(1.1, "a:1", "w0.s0.c0"),
                                   line(1.2, "a:1", "SET", "k", "t", "NX"), *probe), events)
    assert j.disagreements == [] and j.problems == [] and j.missing == {}
    assert j.attempt == [None, "w0.s0.0", None, None, None, None]
    assert j.unattributed == 4 and j.handshakes == 0        # the probe's marker and its PINGs


def test_without_its_marker_the_harness_connections_pings_are_orphans_of_the_old_connection():
    # what the marker is for: the same audit with the probe unmarked
    events = call(10, "w0.s0.0", "acquire", "ok", True, [("w0.s0.c0", 0, "SET")])
    records, ops, j = joined(audit(marker(1.1, "a:1", "w0.s0.c0"), line(1.2, "a:1", "SET", "k", "t", "NX"),
                                   *[line(2.1 + i / 10, "a:1", "PING") for i in range(3)]), events)
    assert sorted(d.split(": ", 1)[1] for d in j.disagreements) == [
        f"PING from w0.s0.c0 seq {n} is in no sent list" for n in (1, 2, 3)]


def test_a_worker_connection_after_a_harness_one_on_the_same_port_is_numbered_from_its_marker():
    events = (call(10, "w0.s0.0", "acquire", "ok", True, [("w0.s0.c0", 0, "SET")])
              + call(20, "w0.s0.1", "acquire", "ok", True, [("w0.s0.c1", 0, "SET")]))
    records, ops, j = joined(audit(marker(1.1, "a:1", "w0.s0.c0"), line(1.2, "a:1", "SET", "k", "t", "NX"),
                                   line(1.5, "a:1", "SELECT", "2"),
                                   line(1.6, "a:1", "ECHO", "leasecheck:harness:admin"),
                                   line(1.7, "a:1", "TIME"),
                                   hello(2.0, "a:1"), marker(2.1, "a:1", "w0.s0.c1"),
                                   line(2.2, "a:1", "SET", "k", "u", "NX")), events)
    assert j.disagreements == [] and j.missing == {}
    assert j.attempt == [None, "w0.s0.0", None, None, None, None, None, "w0.s0.1"]
    # the admin connection's SELECT (its handshake), marker and TIME; the worker's HELLO is its handshake
    assert j.unattributed == 3 and j.handshakes == 1


def test_the_stream_does_not_wait_for_the_history_on_a_hello():
    from leasecheck.checkers.model.join import Joiner
    records = audit(marker(1.1, "a:1", "w0.s0.c0"), hello(2.0, "a:1"), line(2.1, "a:1", "SET", "k", "t"))[0]
    joiner = Joiner()
    assert joiner.ready(records[0])
    joiner.feed(records[0])
    assert joiner.ready(records[1])          # a HELLO never takes a number: nothing to wait for
    assert not joiner.ready(records[2])      # seq 0 of w0.s0.c0: its call is not in yet


WATCHED_RELEASE = [("w0.s0.c0", 1, "WATCH"), ("w0.s0.c0", 2, "GET"), ("w0.s0.c0", 3, "MULTI"),
                   ("w0.s0.c0", 4, "DEL"), ("w0.s0.c0", 5, "EXEC")]


def _watched_release_lines(addr):
    return [line(1.0, addr, "ECHO", "leasecheck:conn:w0.s0.c0"), line(1.1, addr, "SET", "k", "t", "NX"),
            line(1.2, addr, "WATCH", "k"), line(1.3, addr, "GET", "k"), line(1.4, addr, "MULTI"),
            line(1.5, addr, "EXEC")]


def test_an_aborted_exec_that_is_its_connections_last_ran_nothing():
    # The WATCHed key changed: the store lists MULTI and EXEC, never the DEL; the connection
    # then closed (a lease's client per attempt), so no line after the EXEC shows the DEL.
    events = (call(10, "w0.s0.0", "acquire", "ok", True, [("w0.s0.c0", 0, "SET")])
              + call(20, "w0.s0.0", "release", "ok", False, WATCHED_RELEASE))
    records, ops, j = joined(audit(*_watched_release_lines("a:1")), events)
    assert j.disagreements == [] and not j.missing and j.not_run == 1
    assert j.attempt[4] == j.attempt[5] == "w0.s0.0"   # MULTI, EXEC


def test_an_aborted_exec_before_its_address_is_rebound_ran_nothing():
    events = (call(10, "w0.s0.0", "acquire", "ok", True, [("w0.s0.c0", 0, "SET")])
              + call(20, "w0.s0.0", "release", "ok", False, WATCHED_RELEASE)
              + call(30, "w0.s0.1", "acquire", "ok", True, [("w0.s0.c1", 0, "SET")]))
    lines = _watched_release_lines("a:1") + [line(1.6, "a:1", "ECHO", "leasecheck:conn:w0.s0.c1"),
                                             line(1.7, "a:1", "SET", "k", "u", "NX")]
    records, ops, j = joined(audit(*lines), events)
    assert j.disagreements == [] and not j.missing and j.not_run == 1
    assert j.attempt[7] == "w0.s0.1"


def test_an_exec_whose_queued_commands_may_still_come_is_not_settled_in_an_incomplete_audit():
    events = (call(10, "w0.s0.0", "acquire", "ok", True, [("w0.s0.c0", 0, "SET")])
              + call(20, "w0.s0.0", "release", "ok", True, WATCHED_RELEASE))
    records, ops, j = joined(audit(*_watched_release_lines("a:1"), end=False), events)
    assert j.not_run == 0 and 1 in j.missing
