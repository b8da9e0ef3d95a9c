"""`hunt --parallel 2` and `hunt` / `matrix` on a local Dask cluster: the same failing seed found,
a replay command that fails again, the same table as one run at a time, and a Dask worker killed
mid-run giving "not run" for its cell, never a verdict."""
import json
import os
import re
import shlex
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

import leasecheck
from leasecheck.harness.api import matrix_parallel, matrix_plans, matrix_write
from leasecheck.harness.search import matrix as matrix_cells
from leasecheck.harness.search.cluster import ClusterPool
from tests.conftest import ROOT

pytestmark = pytest.mark.integration

# As tests/integration/test_hunt.py: seed 100 of this configuration fails (a holder paused past its
# deadline, half the jobs past the lease), and so does its replay, but for ~1e-4 of the time.
HUNT = ["hunt", "--lease", "naive-del", "--nemesis", "pause:holder", "--nemesis-interval", "2s",
        "--time-limit", "4s", "--workers", "4", "--budget", "60s", "--seed", "100",
        "--job-duration", "50%:0.4s,50%:1.6s", "--incident-replays", "0"]
# As tests/integration/test_matrix.py: naive-del INVALID, token-cas VALID under holder pauses.
MATRIX = dict(leases="naive-del,token-cas", nemesis="pause:holder", ttl="500ms", job_duration="0.3s",
              nemesis_interval="1s", time_limit="4s", workers=4, seed=1)


def _found_and_replayed(r, tmp_path):
    assert r.code == 1, r.out + r.err
    n = int(re.search(r"INVALID at run (\d+) of the hunt", r.out).group(1))
    seed = int(re.search(r"INVALID at run \d+ of the hunt .*seed (\d+)", r.out).group(1))
    assert seed == 100 + n - 1                      # the first failing seed, as one run at a time
    runs = re.findall(r"hunt: (\d+) run\(s\) \(seeds ([^)]*)\)", r.out)
    assert runs and int(runs[-1][0]) == n           # the progress counts the seeds before it, and it
    command = re.search(r"replay: (leasecheck run --replay .+)", r.out).group(1)
    run_dir = Path(shlex.split(command)[-1])
    assert (tmp_path / "results") in run_dir.parents and (run_dir / "results.json").is_file()
    again = subprocess.run([sys.executable, "-m", "leasecheck", *shlex.split(command)[1:],
                            "--results-dir", str(tmp_path / "again")],
                           capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert again.returncode == 1, again.stdout + again.stderr
    assert f"seed {seed}" in again.stdout


def test_hunt_parallel_2_finds_naive_del_and_its_replay_fails_again(leasecheck, tmp_path):
    r = leasecheck(*HUNT, "--parallel", "2", "--junit", str(tmp_path / "hunt.xml"))
    assert "2 at once" in r.out
    _found_and_replayed(r, tmp_path)
    # JUnit from the failing run's one check, made in its own process: a test case per property
    import xml.etree.ElementTree as ET
    cases = list(ET.parse(tmp_path / "hunt.xml").getroot().iter("testcase"))
    assert len(cases) > 1 and any(c.find("failure") is not None for c in cases)


def test_hunt_on_a_local_cluster_finds_naive_del_and_its_replay_fails_again(leasecheck, tmp_path):
    r = leasecheck(*HUNT, "--cluster", "local:2", env={"TMPDIR": str(tmp_path)})
    assert "on cluster local:2" in r.out
    _found_and_replayed(r, tmp_path)
    # the run directory came back from the worker into this results directory, with its report
    run_dir = Path(re.search(r"run directory: (\S+)", r.out).group(1))
    assert (run_dir / "report.html").is_file() and (run_dir / "history.jsonl").is_file()
    assert f"{run_dir.parent.name}/{run_dir.name}/report.html" in (tmp_path / "results" / "index.html").read_text()


def _grid(cells):
    return [(c.lease, c.mix, c.verdict) for c in cells]


def test_matrix_on_a_local_cluster_gives_the_table_of_a_local_matrix(tmp_path, monkeypatch):
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    local = leasecheck.matrix(**MATRIX, results_dir=str(tmp_path / "local"))
    cluster = leasecheck.matrix(**MATRIX, cluster="local:2", results_dir=str(tmp_path / "cluster"))
    assert _grid(cluster.cells) == _grid(local.cells) == [("naive-del", "pause:holder", "INVALID"),
                                                          ("token-cas", "pause:holder", "VALID")]
    assert cluster.exit_code == local.exit_code == 1 and cluster.seed == local.seed == 1
    for cell in cluster.cells:                       # each run came back whole into the caller's results
        assert (tmp_path / "cluster") in cell.run_dir.parents
        assert (cell.run_dir / "report.html").is_file() and (cell.run_dir / "history.jsonl").is_file()
    md = cluster.table_md.read_text()
    assert "| `naive-del` | **INVALID**: " in md and "| `token-cas` | **VALID**: " in md


def test_a_dask_worker_killed_mid_run_gives_not_run_for_its_cell(tmp_path, monkeypatch):
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    plans = matrix_plans(**MATRIX, results_dir=str(tmp_path / "results"))
    killed = []
    with ClusterPool("local:2") as pool:
        pids = pool.worker_pids()

        def kill_the_first_cells_worker():
            # once cell 0's task is on a worker (the run has begun there), kill that worker's process
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline and not killed:
                for address, keys in pool.client.processing().items():
                    if any(str(k).startswith("leasecheck-0-") for k in keys):
                        time.sleep(1.0)              # into the 4 s run
                        os.kill(pids[address], signal.SIGKILL)
                        killed.append(address)
                        break
                time.sleep(0.1)
        watcher = threading.Thread(target=kill_the_first_cells_worker)
        watcher.start()
        cells = matrix_parallel(plans, pool)
        watcher.join()
    assert killed
    lost, other = cells
    assert lost.verdict == matrix_cells.NOT_RUN and lost.run_dir is None, lost
    assert lost.reason.startswith("not run: ") and "lost" in lost.reason
    assert other.verdict == matrix_cells.VALID                   # the other host's cell still ran
    done = matrix_write(cells, plans, "test")
    assert done.exit_code == 2                                   # no cell INVALID, one not VALID
    assert "not run: " in done.table_md.read_text()


@pytest.mark.parametrize("args,says", [
    (["hunt", "--parallel", "2", "--store-port", "7000"],
     "--parallel 2 with --store-port 7000: runs at once cannot share one port; leave out --store-port"),
    (["hunt", "--parallel", "2", "--store-url", "redis://127.0.0.1:6379/0"],
     "--parallel 2 with --store-url: runs at once would share one store and its keys; leave out --store-url"),
    (["matrix", "--lease", "naive-del", "--nemesis", "none", "--cluster", "local:0"],
     "--cluster local:0: give local:N (a local cluster of N worker processes, N >= 1)"),
    (["hunt", "--incident-replays", "-1"], "--incident-replays -1: replay a failing run 0 or more times"),
])
def test_bad_parallel_input_is_refused_before_any_run(leasecheck, tmp_path, args, says):
    r = leasecheck(*args, "--time-limit", "2s", "--results-dir", str(tmp_path / "results"))
    assert r.code == 64, r.out + r.err
    assert says in r.err and len(r.err.strip().splitlines()) == 1
    assert not (tmp_path / "results").exists()


def test_sigterm_stops_every_run_of_a_parallel_hunt_and_each_keeps_its_history(leasecheck, tmp_path):
    # token-cas under no faults does not fail: two 30 s runs are going when SIGTERM comes
    p = leasecheck.popen("hunt", "--lease", "token-cas", "--nemesis", "none", "--time-limit", "30s", "--budget", "120s",
                         "--workers", "2", "--seed", "1", "--parallel", "2")
    results = tmp_path / "results"
    try:
        deadline = time.monotonic() + 90
        started = []
        while time.monotonic() < deadline and len(started) < 2:
            started = [h for h in results.glob("*/*/history.d/harness.jsonl") if "run_start" in h.read_text()]
            time.sleep(0.1)
        assert len(started) == 2, list(results.rglob("*"))
        p.send_signal(signal.SIGTERM)
        out, err = p.communicate(timeout=120)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    assert p.returncode == 2, out + err                     # cut short: inconclusive, never VALID
    assert "hunt interrupted" in out + err
    runs = sorted(d for d in (results / "token-cas").iterdir() if d.is_dir())
    assert len(runs) == 2
    for run in runs:                                         # both stopped cleanly, history kept, checked
        assert (run / "history.jsonl").is_file() and not (run / "history.d").exists()
        result = json.loads((run / "results.json").read_text())
        assert result["valid"] == "unknown" and result["interrupted"]
