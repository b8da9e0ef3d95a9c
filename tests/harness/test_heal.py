"""The healing ledger's undo, without a run: entries are written before a fault acts, undone in
reverse, each by the undo its writer registered; what cannot be undone is reported and left."""
import json
import os
import signal
import subprocess
import sys
import time

import pytest

from leasecheck.harness.faults import FAULTS
from leasecheck.harness.nemesis.heal import LEDGER, UNDO, Ledger, heal_leftovers, undo, undoes
from leasecheck.harness.run.host import proc_started


@pytest.fixture
def calls():
    """An undo kind of the test's own, recording what it was asked to do."""
    seen = []
    UNDO.pop("test-note", None)
    undoes("test-note")(lambda entry: seen.append(entry["what"]))
    yield seen
    UNDO.pop("test-note", None)


def test_the_ledger_mirrors_its_entries_and_heals_in_reverse(tmp_path, calls):
    ledger = Ledger(tmp_path)
    a = ledger.add({"kind": "test-note", "what": "a"})
    ledger.add({"kind": "test-note", "what": "b"})
    doc = json.loads((tmp_path / LEDGER).read_text())
    assert [e["what"] for e in doc["entries"]] == ["a", "b"]
    assert doc["owner"]["pid"] == os.getpid()
    assert ledger.heal(a) is None and calls == ["a"]
    ledger.add({"kind": "test-note", "what": "c"})
    assert ledger.heal_all() == [] and calls == ["a", "c", "b"]
    assert not (tmp_path / LEDGER).exists() and ledger.pending() == []


def test_a_failing_undo_is_reported_and_the_rest_still_heal(tmp_path, calls):
    def boom(entry):
        raise OSError("no such store")
    UNDO["test-boom"] = boom
    try:
        ledger = Ledger(tmp_path)
        ledger.add({"kind": "test-note", "what": "first"})
        ledger.add({"kind": "test-boom"})
        (err,) = ledger.heal_all()
        assert "could not undo test-boom" in err and "no such store" in err and calls == ["first"]
    finally:
        UNDO.pop("test-boom")


def test_an_unknown_kind_is_named():
    assert undo({"kind": "meteor"}).startswith("unknown undo entry")


def test_two_undos_for_one_kind_are_refused(calls):
    with pytest.raises(ValueError, match="two undos"):
        undoes("test-note")(lambda entry: None)


def test_every_kind_a_fault_writes_has_its_undo():
    kinds = {k for f in FAULTS.values() for k in f.undoes}
    assert kinds <= set(UNDO) and {"sigcont", "faketime", "toxic", "redis-config"} <= kinds


def test_sigcont_continues_only_the_process_it_stopped():
    p = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        os.kill(p.pid, signal.SIGSTOP)
        entry = {"kind": "sigcont", "pid": p.pid, "started": proc_started(p.pid)}
        assert undo(dict(entry, started=entry["started"] + 1)) is None     # a recycled PID: left alone
        time.sleep(0.05)
        assert _state(p.pid) == "T"
        assert undo(entry) is None
        time.sleep(0.05)
        assert _state(p.pid) in ("S", "R")
    finally:
        p.kill()
        p.wait()


def test_faketime_is_set_back(tmp_path):
    f = tmp_path / "store"
    f.write_text("+20.000000\n")
    assert undo({"kind": "faketime", "path": str(f)}) is None and f.read_text() == "+0\n"


def test_leftover_ledgers_of_killed_runs_are_healed(tmp_path, calls):
    run = tmp_path / "scenario" / "20260101T000000Z"
    run.mkdir(parents=True)
    (run / LEDGER).write_text(json.dumps([{"kind": "test-note", "what": "x"}, {"kind": "test-note", "what": "y"}]))
    stuck = tmp_path / "other" / "20260101T000001Z"
    stuck.mkdir(parents=True)
    (stuck / LEDGER).write_text(json.dumps([{"kind": "meteor"}]))
    done = heal_leftovers(tmp_path)
    assert calls == ["y", "x"] and not (run / LEDGER).exists()
    assert any("healed 2 fault(s)" in d for d in done)
    assert (stuck / LEDGER).exists() and any("unknown undo entry" in d for d in done)   # left in place


def test_the_ledger_of_a_run_still_going_is_left_to_its_own_harness(tmp_path, calls):
    """Two runs may share a results directory: a run starting (or `leasecheck cleanup`) heals the
    faults of killed runs only, never those of a harness that still runs."""
    live = tmp_path / "scenario" / "live"
    live.mkdir(parents=True)
    ledger = Ledger(live)                      # owned by this process, which is alive
    ledger.add({"kind": "test-note", "what": "live"})
    dead = tmp_path / "scenario" / "dead"
    dead.mkdir(parents=True)
    gone = subprocess.Popen(["true"])
    gone.wait()
    (dead / LEDGER).write_text(json.dumps({"owner": {"pid": gone.pid, "started": 1},
                                           "entries": [{"kind": "test-note", "what": "dead"}]}))
    done = heal_leftovers(tmp_path)
    assert calls == ["dead"] and (live / LEDGER).exists() and not (dead / LEDGER).exists()
    assert len(done) == 1
    assert ledger.heal_all() == [] and calls == ["dead", "live"]


def _state(pid):
    with open(f"/proc/{pid}/stat") as f:
        return f.read().rsplit(")", 1)[1].split()[0]
