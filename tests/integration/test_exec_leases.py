"""exec: leases in real runs, on this branch alone (no attribution of the child's own client
needed): every call recorded around its exchange; a child that exits or prints garbage gives
``info`` completions naming the problem and an inconclusive verdict naming it — never a traceback,
never a hang; no node / no node_modules is one line and exit 64 before anything starts; a killed
worker's children and a killed harness's stopped children are ended (the runner, `cleanup`)."""
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from leasecheck.harness.run.procfs import proc_state

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
CHILD = ROOT / "tests" / "workloads" / "exec_child.py"


def lease(mode):
    return f"exec:{sys.executable} tests/workloads/exec_child.py {mode}"


def history(run_dir):
    return [json.loads(line) for line in (run_dir / "history.jsonl").read_text().splitlines()]


def gone(pids, timeout=20.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if all(proc_state(p) in (None, "Z") for p in pids):
            return True
        time.sleep(0.05)
    return False


def test_every_call_of_an_exec_lease_is_recorded_around_its_exchange(leasecheck):
    r = leasecheck("run", "--lease", lease("good"), "--workers", "2", "--slots", "2", "--time-limit", "3s",
                   "--job-duration", "50ms")
    assert "Traceback" not in r.err + r.out and r.run_dir is not None, r.out + r.err
    events = history(r.run_dir)
    for f in ("acquire", "release"):
        invoked = [e for e in events if e["type"] == "invoke" and e["f"] == f]
        done = [e for e in events if e["type"] in ("ok", "fail", "info") and e["f"] == f]
        assert len(invoked) == len(done) > 10
        assert not [e for e in done if e["type"] == "info"]
    assert {e["process"] for e in events if e["type"] == "invoke"} == {"w0.s0", "w0.s1", "w1.s0", "w1.s1"}
    # the child's lock lives in its own memory, not in the store: no evidence, never VALID
    assert r.code == 2 and r.results["valid"] == "unknown" and r.results["claims_seen"]["count"] == 0


@pytest.mark.parametrize("mode, words", [("exit", "exit code 3"), ("garbage", "'connected to redis!'")])
def test_a_child_that_exits_or_prints_garbage_is_an_info_completion_naming_it(leasecheck, mode, words):
    t = time.monotonic()
    r = leasecheck("run", "--lease", lease(mode), "--workers", "1", "--time-limit", "2s")
    assert time.monotonic() - t < 60
    assert "Traceback" not in r.err + r.out and r.run_dir is not None, r.out + r.err
    infos = [e for e in history(r.run_dir) if e["type"] == "info"]
    assert infos and all(e["f"] == "acquire" and e["error"].startswith("LeaseProcessError: the lease process")
                         for e in infos)
    assert words in infos[0]["error"]
    res = r.results
    assert r.code == 2 and res["valid"] == "unknown"
    assert res["exceptions"]["by_type"] == {"LeaseProcessError": len(infos)}
    reasons = " ".join(res["reasons"])
    assert "the lease raised on every attempt: LeaseProcessError" in reasons and words in reasons


def test_no_node_modules_is_one_line_naming_npm_install_before_anything_starts(leasecheck, tmp_path):
    folder = tmp_path / "nodelease"
    folder.mkdir()
    for name in ("package.json", "ioredis_del.js", "lease_protocol.js"):
        shutil.copy(ROOT / "examples" / "node" / name, folder / name)
    r = leasecheck("run", "--lease", f"exec:node {folder / 'ioredis_del.js'}")
    assert r.code == 64 and r.run_dir is None
    (line,) = r.err.strip().splitlines()
    assert "ioredis, redlock not in" in line and line.endswith(f"run npm install in {os.path.relpath(folder, ROOT)}")


def test_no_node_is_one_line_before_anything_starts(leasecheck, tmp_path):
    bin_dir = tmp_path / "bin"          # a PATH with python and nothing else
    bin_dir.mkdir()
    r = leasecheck("run", "--lease", "node-ioredis-del", env={"PATH": str(bin_dir)})
    assert r.code == 64 and r.run_dir is None
    (line,) = r.err.strip().splitlines()
    assert "no program 'node' on the PATH; install Node.js" in line


def _start(tmp_path, *args, pids):
    env = {"COLUMNS": "160", "PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(tmp_path),
           "EXEC_CHILD_PIDS": str(pids)}
    return subprocess.Popen([sys.executable, "-m", "leasecheck", "run", *args,
                             "--results-dir", str(tmp_path / "results")],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT, env=env)


def _children(pids, n, timeout=60.0):
    """pid -> slot of each lease process that wrote its file (each written whole, then renamed)."""
    deadline = time.monotonic() + timeout
    while len(list(pids.glob("[0-9]*"))) < n and time.monotonic() < deadline:
        time.sleep(0.05)
    return {int(p.name): p.read_text() for p in pids.glob("[0-9]*")}


def _worker_pids(tmp_path, n, timeout=60.0):
    """process -> pid of each worker, from their worker_start events."""
    deadline = time.monotonic() + timeout
    found = {}
    while len(found) < n and time.monotonic() < deadline:
        for part in (tmp_path / "results").glob("*/*/history.d/w*.jsonl"):
            for line in part.read_text().splitlines():
                if '"worker_start"' in line:
                    e = json.loads(line)
                    found[e["process"]] = e["pid"]
        time.sleep(0.05)
    return found


def test_a_killed_workers_children_end_with_the_run(tmp_path):
    pids = tmp_path / "pids"
    pids.mkdir()
    p = _start(tmp_path, "--lease", lease("pid"), "--workers", "2", "--slots", "2", "--time-limit", "20s", pids=pids)
    try:
        children = _children(pids, 4)
        assert sorted(children.values()) == ["w0.s0", "w0.s1", "w1.s0", "w1.s1"]
        workers = _worker_pids(tmp_path, 2)
        os.kill(workers["w0"], signal.SIGKILL)
        out, err = p.communicate(timeout=120)
    finally:
        if p.poll() is None:
            p.kill()
    assert "worker 0 exited" in out and "Traceback" not in err
    assert gone(list(children)), [c for c in children if proc_state(c) not in (None, "Z")]


def test_cleanup_continues_a_killed_harness_s_stopped_children_which_then_end(tmp_path, leasecheck):
    pids = tmp_path / "pids"
    pids.mkdir()
    scenario = tmp_path / "paused.toml"
    scenario.write_text(f"""name = "paused"
[run]
lease = {json.dumps(lease("pid"))}
workers = 1
slots = 2
time_limit = "30s"

[[event]]
at = "1s"
fault = "pause"
target = "worker"
duration = "25s"
""")
    p = _start(tmp_path, "--scenario", str(scenario), pids=pids)
    try:
        children = _children(pids, 2)
        ledger = None
        deadline = time.monotonic() + 60
        while ledger is None and time.monotonic() < deadline:
            found = list((tmp_path / "results").glob("*/*/faults-active.json"))
            ledger = found[0] if found else None
            time.sleep(0.05)
        assert ledger is not None
        stopped = lambda: all(proc_state(c) == "T" for c in children)
        deadline = time.monotonic() + 10
        while not stopped() and time.monotonic() < deadline:
            time.sleep(0.02)
        assert stopped()                               # the pause stopped the children with their worker
        os.kill(p.pid, signal.SIGKILL)                 # the harness dies mid-pause
        p.wait(10)
    finally:
        if p.poll() is None:
            p.kill()
    r = leasecheck("cleanup")
    assert r.code == 0 and not ledger.exists()
    assert gone(list(children), timeout=30)            # continued, their worker gone: they end
