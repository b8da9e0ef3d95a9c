"""Whole runs on the docker backend: the same verdicts as the embedded store, and nothing left
behind — after Ctrl-C, and (through `leasecheck cleanup`) after the harness is killed outright."""
import json
import os
import signal
from pathlib import Path

import pytest
from tests.docker.conftest import wait_for

SCENARIOS = Path(__file__).resolve().parents[2] / "scenarios"


@pytest.mark.parametrize("scenario,lease,expected", [
    ("holder-pause.toml", "naive-del", 1),        # the holder stalls past its deadline: foreign release
    ("store-clock-jump.toml", "token-cas", 1),    # claims expire early: early loss, never a foreign release
])
def test_same_verdicts_as_embedded(leasecheck, store_image, scenario, lease, expected):
    verdicts = {}
    for backend in ("embedded", "docker"):
        r = leasecheck("run", "--scenario", str(SCENARIOS / scenario), "--lease", lease, "--seed", "11",
                       "--backend", backend, "--name", f"{backend}-{scenario}")
        assert r.code == expected, f"{backend}: {r.out}{r.err}"
        res = r.results
        verdicts[backend] = (r.code, res["valid"], res["foreign_releases"] > 0)
        assert len(res["faults"]) == 2
        if scenario.startswith("store-clock"):
            assert all(abs(f["measured"]["store_skew_s"] - 4.0) < 0.2 for f in res["faults"]), backend
        assert (r.run_dir / "store.log").read_text()
    assert verdicts["embedded"] == verdicts["docker"]


def _scenario(tmp_path, body: str) -> Path:
    path = tmp_path / "s.toml"
    path.write_text('name = "docker-stop"\n[run]\nlease = "token-cas"\nworkers = 2\ntime_limit = "60s"\n' + body)
    return path


def _run_dir(tmp_path) -> Path:
    return wait_for(lambda: next((tmp_path / "results" / "docker-stop").glob("*/config.json"), None)).parent


def test_ctrl_c_removes_the_container(leasecheck, tmp_path, store_image, run_containers):
    proc = leasecheck.popen("run", "--backend", "docker", "--scenario", str(_scenario(tmp_path, "")))
    run_dir = _run_dir(tmp_path)
    run_id = json.loads((run_dir / "config.json").read_text())["run_id"]
    assert run_containers(run_id)
    wait_for(lambda: (run_dir / "history.d" / "harness.jsonl").exists())
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode in (0, 1, 2), out + err
    assert run_containers(run_id) == []
    assert "Redis is starting" in (run_dir / "store.log").read_text()


def test_killed_harness_paused_store_is_healed_by_cleanup(leasecheck, tmp_path, store_image, run_containers):
    body = '[[event]]\nat = "0.5s"\nfault = "pause"\ntarget = "store"\nduration = "50s"\n'
    proc = leasecheck.popen("run", "--backend", "docker", "--scenario", str(_scenario(tmp_path, body)))
    run_dir = _run_dir(tmp_path)
    run_id = json.loads((run_dir / "config.json").read_text())["run_id"]
    ledger = run_dir / "faults-active.json"
    wait_for(lambda: ledger.exists() and "docker-unpause" in ledger.read_text())
    container = wait_for(lambda: [c for c in run_containers(run_id) if c.status == "paused"])[0]
    os.kill(proc.pid, signal.SIGKILL)
    proc.communicate(timeout=30)
    assert [c.status for c in run_containers(run_id)] == ["paused"]   # left behind, frozen
    r = leasecheck("cleanup")
    assert r.code == 0, r.out + r.err
    assert "healed 1 fault" in r.out
    # Every run starts by sweeping containers whose harness is gone, so a run of a test running
    # alongside this one may remove the frozen container before `cleanup` does; either way it
    # is gone and its output is in the run directory.
    assert f"removed container {container.name}" in r.out or container.name not in r.out
    assert run_containers(run_id) == [] and not ledger.exists()
    assert (run_dir / "store.log").exists()
