"""Every fault kind measures its own effect — run the way a new user runs it: from the repository
root, with the default relative results directory (no --results-dir). A relative path handed to
another process once left the store's clock unmoved while the run said VALID."""
import json
import os
import shutil
import subprocess
import sys
import uuid
from dataclasses import dataclass
from pathlib import Path

import pytest

from leasecheck.harness.run.host import default_store_bin

pytestmark = pytest.mark.integration
ROOT = Path(__file__).resolve().parents[2]
BASE = ('[run]\nlease = "token-cas"\nworkers = 3\nttl = "{ttl}"\njob_duration = "0.3s"\njobs = {jobs}\n'
        'time_limit = "4s"\n[[event]]\nat = "1s"\nduration = "{duration}"\n')


@dataclass
class Run:
    code: int
    out: str
    run_dir: Path | None

    @property
    def fault(self) -> dict:
        (f,) = json.loads((self.run_dir / "results.json").read_text())["faults"]
        return f


@pytest.fixture
def from_root(tmp_path):
    """``leasecheck run --scenario FILE --name UNIQUE ARGS`` with cwd = the repository root and the
    default ``--results-dir results``; the run's own folder is removed afterwards."""
    names = []

    def run(event: str, *args: str, ttl="1s", jobs=1, duration="1.5s") -> Run:
        scenario = tmp_path / "s.toml"
        scenario.write_text(BASE.format(ttl=ttl, jobs=jobs, duration=duration) + event)
        name = f"test-fault-effects-{uuid.uuid4().hex[:8]}"
        names.append(name)
        env = {"COLUMNS": "160", "PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "HOME": str(tmp_path)}
        p = subprocess.run([sys.executable, "-m", "leasecheck", "run", "--scenario", str(scenario), "--name", name,
                            *args], capture_output=True, text=True, timeout=120, cwd=ROOT, env=env)
        found = sorted((ROOT / "results" / name).glob("*"))
        return Run(p.returncode, p.stdout + p.stderr, found[-1] if found else None)

    yield run
    for name in names:
        shutil.rmtree(ROOT / "results" / name, ignore_errors=True)


def _effective(r: Run) -> dict:
    """The fault took effect; the run is valid, or — for a fault that makes the store lose
    claims (a clock jump, an eviction, a restart) — fails by early loss and nothing else."""
    assert r.code in (0, 1), r.out
    if r.code == 1:
        reasons = json.loads((r.run_dir / "results.json").read_text())["reasons"]
        # (a string, so that pytest prints it whole: the run's folder is removed afterwards, and
        # the terminal summary is what is left of an unexpected verdict)
        assert all("lost before the lease's deadline" in x for x in reasons), "\n".join(reasons + [r.out])
    f = r.fault
    assert f["took_effect"] is True, f
    assert "did not take effect" not in r.out
    return f["measured"]


def test_pause_stops_the_holder_for_the_time_asked(from_root):
    m = _effective(from_root('fault = "pause"\ntarget = "holder"\n'))
    assert 1.25 <= m["stopped_s"] <= 1.8 and len(m["processes"]) == 1
    assert m["stopped_samples"][0] >= 50


def test_pause_stops_the_store(from_root):
    m = _effective(from_root('fault = "pause"\ntarget = "store"\n'))
    assert 1.25 <= m["stopped_s"] <= 1.8 and m["processes"] == ["store"]


def test_store_clock_moves_by_the_offset(from_root):
    r = from_root('fault = "clock"\ntarget = "store"\noffset = "+3s"\n')
    m = _effective(r)
    assert abs(m["store_skew_s"] - 3.0) < 0.2 and abs(m["store_skew_before_heal_s"] - 3.0) < 0.2
    assert abs(m["store_skew_after_heal_s"]) < 0.2
    config = json.loads((r.run_dir / "config.json").read_text())
    assert config["results_dir"] == "results" and Path(config["store_bin"]).is_absolute()


def test_each_worker_clock_moves_by_its_own_offset(from_root):
    m = _effective(from_root('fault = "clock"\ntarget = "workers"\noffset = "+5s"\n'))
    assert sorted(m["worker_skew_s"]) == ["w0", "w1", "w2"]
    for w, off in m["offsets_s"].items():
        assert 1.2 <= off <= 5.0 and abs(m["worker_skew_s"][w] - off) < 0.2


def test_latency_is_felt_by_a_probe_through_the_proxy(from_root):
    m = _effective(from_root('fault = "latency"\nlatency = "100ms"\njitter = "0ms"\n'))
    assert 95 <= m["probe_rtt_ms"] <= 115 and m["after_heal_probe_rtt_ms"] < 20


def test_partition_leaves_a_probe_unanswered(from_root):
    m = _effective(from_root('fault = "partition"\n'))
    assert m["probe_answered_during"] is False and m["probe_rtt_after_heal_ms"] is not None


def test_kill_brings_back_a_new_empty_store(from_root):
    m = _effective(from_root('fault = "kill"\n', duration="0.5s"))
    assert m["run_id_before"] != m["run_id_after"] and m["keys_after_restart"] == 0


def _gone(pid) -> bool:
    """No process with this PID runs (or one that is a zombie of nobody's)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True


def test_kill_holder_kills_the_holders_worker_and_a_replacement_takes_over(from_root):
    r = from_root('fault = "kill"\ntarget = "holder"\n', duration="1s")
    m = _effective(r)
    assert r.code == 0, r.out
    assert m["exit_code"] == -9 and m["gone"] is True and m["held"] is True
    assert m["processes"] == ["w" + m["slots"][0].split(".")[0][1:]] and m["attempts"]
    assert m["replacement"] == "w3" and isinstance(m["replacement_pid"], int)
    res = json.loads((r.run_dir / "results.json").read_text())
    assert res["safety"]["valid"] is True and res["liveness"]["valid"] is True
    rec = res["recovery"]                     # token-cas: the dead holder's claim expires within its TTL
    assert rec["count"] >= 1 and rec["max_s"] <= rec["bound_s"] and rec["within_bound"] is True
    assert rec["events"][0]["attempt"] in m["attempts"]
    assert "recovery" in r.out and "safety VALID · liveness VALID" in r.out
    history = (r.run_dir / "history.jsonl").read_text()
    assert '"process":"w3"' in history.replace(" ", "")      # the replacement ran under its own name
    assert _gone(m["pid"]) and _gone(m["replacement_pid"])   # nothing left running afterwards
    assert not (r.run_dir / "faults-active.json").exists()


def test_hang_holder_freezes_the_holders_job_while_its_renewals_go_on(from_root):
    r = from_root('fault = "hang"\ntarget = "holder"\n', "--lease", "token-cas-renew", duration="1.5s")
    m = _effective(r)
    assert r.code == 0, r.out
    assert m["in_job"] and m["held_through"] and m["alive"] and 1.45 <= m["held_s"] <= 2.0
    assert m["calls_during"] >= 3              # renewals every TTL/3 kept going while the job was frozen
    res = json.loads((r.run_dir / "results.json").read_text())
    assert res["valid"] is True and res["safety"]["valid"] is True and res["liveness"]["valid"] is True
    holds = res["holds"]                       # the hung holder's claim, renewed all along
    assert holds["longest_s"] >= 1.5 + 0.3 - 0.05 and holds["longest"]["attempt"].startswith(m["slot"] + ".")
    assert "longest hold" in r.out and f"{holds['longest_s']} s" in r.out
    assert not (r.run_dir / "faults-active.json").exists()
    pids = [json.loads(line)["pid"] for line in (r.run_dir / "history.jsonl").read_text().splitlines()
            if '"worker_start"' in line]
    assert pids and all(_gone(p) for p in pids)             # no worker left running (or stopped)


def test_hang_holder_freezes_an_asynchronous_holders_task_while_its_renewals_go_on(from_root):
    # The job of an `async def` lease is a task on the worker's event loop: the freeze reaches it too.
    r = from_root('fault = "hang"\ntarget = "holder"\n', "--lease", "examples/async_lease.py:AsyncTokenCasRenew",
                  "--slots", "2", duration="1.5s")
    m = _effective(r)
    assert r.code == 0, r.out
    assert m["in_job"] and m["held_through"] and m["alive"] and 1.45 <= m["held_s"] <= 2.0
    assert m["calls_during"] >= 3              # renewals every TTL/3 kept going while the job was frozen
    holds = json.loads((r.run_dir / "results.json").read_text())["holds"]
    assert holds["longest_s"] >= 1.5 + 0.3 - 0.05 and holds["longest"]["attempt"].startswith(m["slot"] + ".")


def test_evict_loses_keys_of_the_run(from_root):
    m = _effective(from_root('fault = "evict"\n', ttl="5s", jobs=4, duration="2s"))
    assert m["evicted_keys"] > 0 and m["evicted_run_keys"] >= 1
    assert all(":job:" in k for k in m["evicted_run_key_examples"])
    assert m["restored"] == {"maxmemory": "0", "maxmemory-policy": "noeviction", "notify-keyspace-events": ""}


def test_a_store_that_ignores_libfaketime_makes_the_run_inconclusive(from_root, tmp_path):
    # A static or setuid store binary ignores LD_PRELOAD; this wrapper drops it on purpose.
    wrapper = tmp_path / "redis-server-no-preload"
    wrapper.write_text(f'#!/bin/sh\nexec env -u LD_PRELOAD {default_store_bin()} "$@"\n')
    wrapper.chmod(0o755)
    r = from_root('fault = "clock"\ntarget = "store"\noffset = "+3s"\n', "--store-bin", str(wrapper))
    assert r.code == 2, r.out
    assert "did not take effect" in r.out
    f = r.fault
    assert f["took_effect"] is False and abs(f["measured"]["store_skew_s"]) < 0.2
    assert "requested +3.000 s, measured" in f["why"]
    results = json.loads((r.run_dir / "results.json").read_text())
    assert results["valid"] == "unknown"
    assert any(x.startswith("fault 0 clock:store did not take effect") for x in results["reasons"])


def test_a_scenario_fault_after_the_time_limit_is_named_and_the_run_is_inconclusive(from_root):
    r = from_root('fault = "pause"\n', "--time-limit", "0.8")
    assert r.code == 2, r.out
    assert "starts after --time-limit 0.8s and will not fire (give --time-limit 2.5s or more" in r.out
    results = json.loads((r.run_dir / "results.json").read_text())
    (missed,) = results["faults_not_fired"]
    assert missed["fault"] == "pause" and results["faults"] == []
    assert any("never fired" in x or "did not fire" in x for x in results["reasons"]), results["reasons"]


def test_a_fault_that_never_fired_is_named_and_the_run_is_inconclusive(tmp_path):
    """SIGINT before the second fault's time: the first acted, the second is named as not fired."""
    import signal
    import time

    scenario = tmp_path / "two.toml"
    scenario.write_text('[run]\nlease = "token-cas"\nworkers = 2\ntime_limit = "30s"\n'
                        '[[event]]\nat = "0.5s"\nfault = "pause"\ntarget = "worker"\nduration = "0.5s"\n'
                        '[[event]]\nat = "20s"\nfault = "pause"\ntarget = "worker"\nduration = "1s"\n')
    results = tmp_path / "results"
    p = subprocess.Popen([sys.executable, "-m", "leasecheck", "run", "--scenario", str(scenario),
                          "--results-dir", str(results)], cwd=ROOT, stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, text=True, env=dict(os.environ, COLUMNS="160"))
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not list(results.glob("*/*/history.d/harness.jsonl")):
            time.sleep(0.1)
        time.sleep(2.5)
        p.send_signal(signal.SIGINT)
        out, _ = p.communicate(timeout=60)
    finally:
        if p.poll() is None:
            p.kill()
    assert p.returncode == 2, out
    assert "fault 1 pause:worker did not fire" in out
    res = json.loads((results / "latest" / "results.json").read_text())
    (missed,) = res["faults_not_fired"]
    assert (missed["n"], missed["at"], missed["fault"]) == (1, 20.0, "pause")
    assert missed["why"].startswith("the run ended (interrupted)")
    assert res["faults"][0]["took_effect"] is True
