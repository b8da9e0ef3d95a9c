"""Faults against real processes, the harness's end: a run killed, interrupted or crashed mid-fault
heals (itself, or `leasecheck cleanup`, or the next run), and a Toxiproxy the harness does not own
is driven and cleaned up the same way. Split from test_faults.py so that the two files run on
both xdist workers at once."""
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration


def _history(run_dir: Path) -> list[dict]:
    return [json.loads(line) for line in (run_dir / "history.jsonl").read_text().splitlines()]


def _scenario(tmp_path, text: str) -> str:
    f = tmp_path / "scenario.toml"
    f.write_text(text)
    return str(f)


def _stopped(pids) -> list[int]:
    out = []
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat") as f:
                if f.read().rsplit(")", 1)[1].split()[0] == "T":
                    out.append(pid)
        except OSError:
            pass
    return out


def test_sigkill_mid_fault_then_cleanup_heals(tmp_path):
    results = tmp_path / "results"
    scenario = tmp_path / "long-pause.toml"
    scenario.write_text('[run]\nlease = "token-cas"\nworkers = 3\ntime_limit = "60s"\n'
                        '[[event]]\nat = "2s"\nfault = "pause"\ntarget = "workers"\nduration = "50s"\n'
                        '[[event]]\nat = "2.5s"\nfault = "clock"\ntarget = "workers"\noffset = "+30s"\n'
                        'duration = "50s"\n')
    p = subprocess.Popen([sys.executable, "-m", "leasecheck", "run", "--scenario", str(scenario),
                          "--results-dir", str(results)], stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL)
    pids = []
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            ledger = list(results.glob("*/*/faults-active.json"))
            if ledger and len(json.loads(ledger[0].read_text())["entries"]) >= 2:
                break
            time.sleep(0.2)
        entries = json.loads(ledger[0].read_text())["entries"]
        pids = [e["pid"] for e in entries if e["kind"] == "sigcont"]
        assert pids and _stopped(pids) == pids
        p.send_signal(signal.SIGKILL)
        p.wait(10)
    finally:
        if p.poll() is None:
            p.kill()
    run_dir = ledger[0].parent
    c = subprocess.run([sys.executable, "-m", "leasecheck", "cleanup", "--results-dir", str(results)],
                       capture_output=True, text=True, timeout=60)
    assert c.returncode == 0 and "healed" in c.stdout, c.stdout + c.stderr
    assert _stopped(pids) == []
    assert not (run_dir / "faults-active.json").exists()
    for f in (run_dir / "faketime").glob("w?"):
        assert float(f.read_text()) == 0.0
    # Continued, the orphaned workers notice their harness is gone and exit.
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and any(os.path.exists(f"/proc/{pid}") and not _zombie(pid) for pid in pids):
        time.sleep(0.2)
    assert not any(os.path.exists(f"/proc/{pid}") and not _zombie(pid) for pid in pids)


def _zombie(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True


@pytest.fixture
def toxiproxy_server(tmp_path):
    """A Toxiproxy-API server the harness does not own (our proxy, started apart), standing in
    for a real Toxiproxy."""
    from leasecheck.harness.proxy import EmbeddedProxy

    server = EmbeddedProxy(tmp_path / "toxiproxy.log")
    url = server.start()
    yield url
    server.stop()


def test_an_external_toxiproxy_is_driven_the_same_way(leasecheck, tmp_path, toxiproxy_server):
    s = _scenario(tmp_path, '[run]\nlease = "token-cas"\nworkers = 3\ntime_limit = "5s"\n'
                            '[[event]]\nat = "1.5s"\nfault = "latency"\nlatency = "150ms"\njitter = "0ms"\n'
                            'duration = "2s"\n')
    r = leasecheck("run", "--scenario", s, "--toxiproxy-url", toxiproxy_server)
    assert r.code == 0, r.out + r.err
    (fault,) = r.results["faults"]
    assert 135 <= fault["measured"]["probe_rtt_ms"] <= 165
    import requests

    assert requests.get(f"{toxiproxy_server}/proxies", timeout=5).json() == {}  # removed at the end


def test_sigkill_mid_partition_then_cleanup_removes_the_toxic(tmp_path, toxiproxy_server):
    import requests

    results = tmp_path / "results"
    s = _scenario(tmp_path, '[run]\nlease = "token-cas"\nworkers = 2\ntime_limit = "60s"\n'
                            '[[event]]\nat = "1s"\nfault = "partition"\nduration = "50s"\n')
    p = subprocess.Popen([sys.executable, "-m", "leasecheck", "run", "--scenario", s, "--toxiproxy-url",
                          toxiproxy_server, "--results-dir", str(results)],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def toxics():
        return [t for proxy in requests.get(f"{toxiproxy_server}/proxies", timeout=5).json().values()
                for t in proxy["toxics"]]

    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and len(toxics()) < 2:
            time.sleep(0.2)
        assert len(toxics()) == 2
        p.send_signal(signal.SIGKILL)
        p.wait(10)
    finally:
        if p.poll() is None:
            p.kill()
    assert len(toxics()) == 2                      # the killed harness could not heal
    c = subprocess.run([sys.executable, "-m", "leasecheck", "cleanup", "--results-dir", str(results)],
                       capture_output=True, text=True, timeout=60)
    assert c.returncode == 0 and "healed" in c.stdout, c.stdout + c.stderr
    assert toxics() == []
    assert not list(results.glob("*/*/faults-active.json"))


def test_sigterm_mid_fault_heals_and_keeps_the_history(tmp_path):
    results = tmp_path / "results"
    s = _scenario(tmp_path, '[run]\nlease = "token-cas"\nworkers = 3\ntime_limit = "60s"\n'
                            '[[event]]\nat = "1s"\nfault = "pause"\ntarget = "workers"\nduration = "50s"\n'
                            '[[event]]\nat = "1s"\nfault = "clock"\ntarget = "store"\noffset = "+20s"\n'
                            'duration = "50s"\n')
    p = subprocess.Popen([sys.executable, "-m", "leasecheck", "run", "--scenario", s, "--results-dir",
                          str(results)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    ledger = []
    while time.monotonic() < deadline:
        ledger = list(results.glob("*/*/faults-active.json"))
        if ledger and len(json.loads(ledger[0].read_text())["entries"]) >= 2:
            break
        time.sleep(0.2)
    pids = [e["pid"] for e in json.loads(ledger[0].read_text())["entries"] if e["kind"] == "sigcont"]
    # under load the ledger can name a pause a moment before /proc shows the process stopped (a clean
    # clone's CI on ad7d0cd read [] for [8373] here): give the stop up to 5 s to show
    settle = time.monotonic() + 5
    while _stopped(pids) != pids and time.monotonic() < settle:
        time.sleep(0.05)
    assert _stopped(pids) == pids
    p.send_signal(signal.SIGTERM)
    out, err = p.communicate(timeout=60)
    run_dir = ledger[0].parent
    assert p.returncode in (0, 1, 2), out + err
    assert _stopped(pids) == [] and not (run_dir / "faults-active.json").exists()
    assert float((run_dir / "faketime" / "store").read_text()) == 0.0
    assert (run_dir / "history.jsonl").exists() and (run_dir / "results.json").exists()
    ends = [e for e in _history(run_dir) if e["type"] == "fault_end"]
    assert len(ends) == 2
    assert [e for e in _history(run_dir) if e["type"] == "run_end"][0]["reason"] == "interrupted"


def test_a_worker_crash_ends_the_run_and_heals_the_faults(tmp_path):
    results = tmp_path / "results"
    s = _scenario(tmp_path, '[run]\nlease = "token-cas"\nworkers = 4\ntime_limit = "60s"\n'
                            '[[event]]\nat = "1s"\nfault = "pause"\ntarget = "workers"\nduration = "50s"\n')
    p = subprocess.Popen([sys.executable, "-m", "leasecheck", "run", "--scenario", s, "--results-dir",
                          str(results)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    ledger = []
    while time.monotonic() < deadline:
        ledger = list(results.glob("*/*/faults-active.json"))
        if ledger:
            break
        time.sleep(0.2)
    run_dir = ledger[0].parent
    paused = [e["pid"] for e in json.loads(ledger[0].read_text())["entries"] if e["kind"] == "sigcont"]
    started = [json.loads(l)["pid"] for f in (run_dir / "history.d").glob("w*.jsonl")
               for l in f.read_text().splitlines() if '"worker_start"' in l]
    victim = next(pid for pid in started if pid not in paused)
    os.kill(victim, signal.SIGKILL)
    out, err = p.communicate(timeout=60)
    assert "exited with code" in out, out + err
    assert _stopped(paused) == [] and not (run_dir / "faults-active.json").exists()
    assert [e for e in _history(run_dir) if e["type"] == "run_end"][0]["reason"] == "worker-crashed"


def test_the_next_run_heals_what_a_killed_run_left(tmp_path, leasecheck):
    results = tmp_path / "results"
    s = _scenario(tmp_path, '[run]\nlease = "token-cas"\nworkers = 2\ntime_limit = "60s"\n'
                            '[[event]]\nat = "1s"\nfault = "pause"\ntarget = "worker"\nduration = "50s"\n')
    p = subprocess.Popen([sys.executable, "-m", "leasecheck", "run", "--scenario", s, "--results-dir",
                          str(results)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        ledger = []
        while time.monotonic() < deadline and not ledger:
            ledger = list(results.glob("*/*/faults-active.json"))
            time.sleep(0.2)
        pids = [e["pid"] for e in json.loads(ledger[0].read_text())["entries"] if e["kind"] == "sigcont"]
        assert _stopped(pids) == pids
        p.send_signal(signal.SIGKILL)
        p.wait(10)
    finally:
        if p.poll() is None:
            p.kill()
    r = leasecheck("run", "--lease", "token-cas", "--workers", "1", "--time-limit", "1")
    assert r.code == 0, r.out + r.err
    assert "healed a killed run's faults" in r.out
    assert _stopped(pids) == [] and not ledger[0].exists()
