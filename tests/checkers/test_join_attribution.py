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
