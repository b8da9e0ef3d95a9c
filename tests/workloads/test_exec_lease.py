"""exec: leases, the Python side of the line protocol, against real child processes (a Python
child, tests/workloads/exec_child.py): each call one exchange; a child that exits, prints garbage,
never says ready or answers an error raises in that call, naming the problem (an ``info``
completion in a run), and the next acquire starts a fresh child; closing ends it. The checks
before a run: no program, no script, a Node.js script without its node_modules — one line naming
the fix."""
import json
import os
import sys
import time
from pathlib import Path

import pytest

from leasecheck.harness.errors import UsageError
from leasecheck.workloads.leases import BUILTIN, ROOT, load_lease
from leasecheck.workloads.leases import exec_lease
from leasecheck.workloads.leases.exec_lease import LeaseError, LeaseProcessError

CHILD = Path(__file__).with_name("exec_child.py")
URL = "redis://127.0.0.1:6399/0"


def spec(mode="good"):
    return f"exec:{sys.executable} {CHILD} {mode}"


def slot_leases(mode="good", process="w0.s0"):
    return load_lease(spec(mode)).for_slot(process)


def test_each_call_is_one_exchange_with_the_slots_one_child():
    leases = slot_leases()
    try:
        first = leases(URL, "job:0", 1000)
        assert first.acquire() is True
        pid = leases.child.proc.pid
        assert first.renew is not None and first.renew() is True      # the child said it renews
        assert first.release() is True
        second = leases(URL, "job:0", 1000)
        assert second.acquire() is True                               # a new attempt, on the same child
        assert second.release() is True and second.release() is False
        assert leases.child.proc.pid == pid                           # one child per slot
    finally:
        leases.close()


def test_the_child_is_given_the_slots_url_and_name(tmp_path):
    leases = load_lease(f"exec:{sys.executable} {CHILD} pid").for_slot("w3.s1")
    os.environ["EXEC_CHILD_PIDS"] = str(tmp_path)
    try:
        lease = leases(URL, "job:0", 1000)
        assert lease.acquire() is True
        pid = leases.child.proc.pid
        assert (tmp_path / str(pid)).read_text() == "w3.s1"
    finally:
        del os.environ["EXEC_CHILD_PIDS"]
        leases.close()
    assert leases.child.proc is None
    with pytest.raises(ProcessLookupError):   # closing ended it (and reaped it)
        os.kill(pid, 0)


def test_a_child_that_exits_raises_naming_its_exit_code_and_last_words_then_is_restarted():
    leases = slot_leases("exit")
    try:
        with pytest.raises(LeaseProcessError) as e:
            leases(URL, "job:0", 1000).acquire()
        text = str(e.value)
        assert "exit code 3" in text and "cannot reach the store" in text and "exec_child.py exit" in text
        assert "\n" not in text
        with pytest.raises(LeaseProcessError):         # a fresh child, which exits again
            leases(URL, "job:0", 1000).acquire()
    finally:
        leases.close()


def test_a_child_that_prints_garbage_raises_naming_the_line_and_is_ended():
    leases = slot_leases("garbage")
    try:
        lease = leases(URL, "job:0", 1000)
        with pytest.raises(LeaseProcessError) as e:
            lease.acquire()
        assert "'connected to redis!'" in str(e.value) and "not a reply" in str(e.value)
        assert leases.child.proc is None                       # out of step: ended
        with pytest.raises(LeaseProcessError) as e:            # a release after it ended: no restart
            lease.release()
        assert "before release" in str(e.value)
    finally:
        leases.close()


def test_a_child_that_never_says_ready_is_ended_after_the_wait(monkeypatch):
    monkeypatch.setattr(exec_lease, "READY_S", 0.5)
    leases = slot_leases("silent")
    try:
        t = time.monotonic()
        with pytest.raises(LeaseProcessError) as e:
            leases(URL, "job:0", 1000).acquire()
        assert "said nothing within 0.5 s" in str(e.value)
        assert time.monotonic() - t < 30
    finally:
        leases.close()


def test_an_error_reply_raises_as_the_type_the_child_named():
    leases = slot_leases("error")
    try:
        with pytest.raises(LeaseError) as e:
            leases(URL, "job:0", 1000).acquire()
        assert type(e.value).__name__ == "ConnectionError" and str(e.value) == "store gone"
        assert leases.child.proc.poll() is None                # still in step: kept
    finally:
        leases.close()


def test_a_command_that_cannot_start_is_refused_before_the_run():
    with pytest.raises(UsageError, match=r"no program 'no-such-program-xyz' on the PATH"):
        load_lease("exec:no-such-program-xyz lease.js")
    with pytest.raises(UsageError, match=r"no such file nowhere/lease\.js"):
        load_lease(f"exec:{sys.executable} nowhere/lease.js")
    with pytest.raises(UsageError, match=r"no command after exec:"):
        load_lease("exec:  ")
    with pytest.raises(UsageError, match=r"cannot split"):
        load_lease("exec:node 'lease.js")


def test_no_node_is_one_line_naming_the_install(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))           # a PATH without node
    with pytest.raises(UsageError) as e:
        load_lease("node-ioredis-del")
    assert "no program 'node' on the PATH; install Node.js" in str(e.value) and "\n" not in str(e.value)


def test_a_node_script_without_its_node_modules_names_npm_install(tmp_path, monkeypatch):
    folder = tmp_path / "mylease"
    folder.mkdir()
    (folder / "package.json").write_text(json.dumps({"dependencies": {"ioredis": "^5", "redlock": "^4"}}))
    (folder / "lease.js").write_text("")
    monkeypatch.chdir(tmp_path)
    with pytest.raises(UsageError) as e:
        load_lease("exec:node mylease/lease.js")
    text = str(e.value)
    assert "ioredis, redlock not in mylease/node_modules" in text and text.endswith("run npm install in mylease")
    (folder / "node_modules" / "ioredis").mkdir(parents=True)
    (folder / "node_modules" / "ioredis" / "package.json").write_text("{}")
    with pytest.raises(UsageError, match=r"redlock not in"):
        load_lease("exec:node mylease/lease.js")


def test_the_node_builtins_run_the_repositorys_examples():
    for name in ("node-ioredis-del", "node-redlock"):
        target = BUILTIN[name]
        argv = exec_lease.parse(target, base=ROOT)
        assert argv[0] == "node" and Path(argv[1]).is_file() and Path(argv[1]).parent == ROOT / "examples" / "node"


def test_a_builtin_whose_script_is_not_here_names_a_source_checkout(monkeypatch, tmp_path):
    import leasecheck.workloads.leases as leases
    monkeypatch.setattr(leases, "ROOT", tmp_path)        # as installed from a wheel: no examples/
    with pytest.raises(UsageError) as e:
        load_lease("node-redlock")
    text = str(e.value)
    assert text.startswith("--lease node-redlock runs ") and "source checkout" in text and "\n" not in text
