"""``bench/throughput.py --wire`` prints the wire path's lease operations per second as a ratio
to the redis-py path's, both measured in the same invocation (the numbers themselves are the
benchmark's to report, in bench/RESULTS.md; this checks that it reports them)."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration
ROOT = Path(__file__).resolve().parents[2]


def test_the_throughput_bench_prints_the_wire_ratio():
    p = subprocess.run([sys.executable, "bench/throughput.py", "--workers", "1", "--seconds", "3", "--wire"],
                       cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stderr
    lines = [json.loads(line) for line in p.stdout.splitlines()]
    runs = {line["what"]: line for line in lines if "what" in line}
    py = runs["leasecheck run (token-cas, history + audit)"]
    wire = runs["leasecheck run (token-cas on the wire path, TokenCasUrl, history + audit)"]
    summary = next(line for line in lines if "wire_ratio_to_redis_py" in line)
    assert py["valid"] is True and wire["valid"] is True and summary["wire_valid"] is True
    assert py["window_ops_per_s"] > 0 and wire["window_ops_per_s"] > 0
    for run in runs.values():     # the floor's too: what sets wall clock and CPU apart
        assert 0 <= run["idle_share"] <= 1 and run["store_wait_share"] >= 0 and 0 <= run["steal_share"] <= 1
    assert {line["build"] for line in lines} == {"compiled"} or {line["build"] for line in lines} == {"pure-python"}
    sides = next(line for line in lines if "harness_idle_share" in line)
    assert 0 <= sides["floor_idle_share"] <= 1 and sides["harness_store_wait_share"] >= 0
    assert summary["wire_ratio_to_redis_py"] == round(wire["window_ops_per_s"] / py["window_ops_per_s"], 3)
    assert summary["wire_cpu_ratio"] == round(py["cpu_ms_per_kop"] / wire["cpu_ms_per_kop"], 3)


def test_every_other_round_of_the_throughput_bench_runs_in_the_reverse_order():
    # no side always runs right after the same other one: round 0 measures the floor, then the
    # harness; round 1 the harness, then the floor; the summary pairs each round's two
    p = subprocess.run([sys.executable, "bench/throughput.py", "--workers", "1", "--seconds", "3", "--repeat", "2"],
                       cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stderr
    lines = [json.loads(line) for line in p.stdout.splitlines()]
    runs = [(line["round"], line["place"], line["what"].split(" (")[0]) for line in lines if "what" in line]
    assert runs == [(0, 0, "bare redis-py loop + MONITOR reader"), (0, 1, "leasecheck run"),
                    (1, 0, "leasecheck run"), (1, 1, "bare redis-py loop + MONITOR reader")]
    summary = lines[-1]
    ratios = sorted(round(h["window_ops_per_s"] / f["window_ops_per_s"], 3)
                    for f, h in ((lines[0], lines[1]), (lines[3], lines[2])))
    assert summary["ratio_range"] == ratios


def test_beside_measures_the_harness_and_the_floor_in_one_window():
    # half the workers for the harness, half the loops for the floor, at once; only CPU compared
    p = subprocess.run([sys.executable, "bench/throughput.py", "--workers", "2", "--seconds", "4", "--repeat", "2",
                        "--beside"], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stderr
    *rounds, summary = [json.loads(line) for line in p.stdout.splitlines()]
    assert [r["round"] for r in rounds] == [0, 1] and all(r["each_side"] == 1 for r in rounds)
    assert [r["first"] for r in rounds] == ["harness", "floor"]     # the floor first every other round
    assert all(r["floor_loops_in_own_session"] == 1 for r in rounds)     # as each worker leads one
    for r in rounds:
        assert r["floor_window_ops"] > 0 and r["harness_window_ops"] > 0
        assert r["cpu_ratio"] == round(r["floor_cpu_ms_per_kop"] / r["harness_cpu_ms_per_kop"], 3)
        assert set(r["floor_cpu_ms_per_kop_by_role"]) == {"loops", "monitor", "store"}
        assert {"harness", "store", "workers"} <= set(r["harness_cpu_ms_per_kop_by_role"])
        assert abs(r["floor_window_s"] - r["harness_window_s"]) < 1.0     # one window, both sides
    ratios = [r["cpu_ratio"] for r in rounds]
    assert summary["cpu_ratio_range"] == [min(ratios), max(ratios)]
    assert summary["cpu_ratio_by_first"] == {"harness": ratios[0], "floor": ratios[1]}


def test_beside_a_baseline_measures_two_harness_runs_in_one_window():
    # this checkout's harness beside a checkout's (itself here), half the workers each; the baseline's
    # run starts first every other round
    p = subprocess.run([sys.executable, "bench/throughput.py", "--workers", "2", "--seconds", "4", "--repeat", "2",
                        "--beside", "--baseline", str(ROOT)], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stderr
    *rounds, summary = [json.loads(line) for line in p.stdout.splitlines()]
    assert [(r["round"], r["first"]) for r in rounds] == [(0, "this"), (1, "baseline")]
    for r in rounds:
        assert r["what"] == "beside-baseline" and r["each_side"] == 1 and r["baseline"] == str(ROOT)
        assert r["this_window_ops"] > 0 and r["baseline_window_ops"] > 0
        assert r["baseline_cpu_ratio"] == round(r["baseline_cpu_ms_per_kop"] / r["this_cpu_ms_per_kop"], 3)
        for side in ("this", "baseline"):
            assert {"harness", "store", "workers"} <= set(r[f"{side}_cpu_ms_per_kop_by_role"])
    ratios = [r["baseline_cpu_ratio"] for r in rounds]
    assert summary["baseline_cpu_ratio_range"] == [min(ratios), max(ratios)]
    assert summary["baseline_cpu_ratio_by_first"] == {"this": ratios[0], "baseline": ratios[1]}
    assert summary["baseline_build"] == summary["build"]


def test_beside_refuses_an_odd_count_in_one_line():
    p = subprocess.run([sys.executable, "bench/throughput.py", "--workers", "3", "--beside"],
                       cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert p.returncode == 64 and p.stdout == ""
    assert p.stderr.strip().count("\n") == 0 and "even worker counts" in p.stderr


def _copy(tmp_path: Path, name: str) -> Path:
    """The package and its three halves, compiled extensions included, as another checkout."""
    import shutil
    dest = tmp_path / name
    for folder in ("leasecheck", "checkers", "harness", "workloads"):
        shutil.copytree(ROOT / folder, dest / folder, ignore=shutil.ignore_patterns("__pycache__"))
    return dest


def test_a_baseline_that_would_run_another_build_is_refused_before_anything_runs(tmp_path):
    # A copy whose extensions are older than its sources runs the pure-Python modules; against a
    # compiled checkout the comparison would measure the build, not the change.
    sys.path.insert(0, str(ROOT / "bench"))
    try:
        from throughput import build_of
    finally:
        sys.path.remove(str(ROOT / "bench"))
    here = build_of(ROOT)
    assert here in ("compiled", "pure-python")
    fresh = _copy(tmp_path, "fresh")
    for ext in fresh.rglob("*.so"):
        ext.touch()
    assert build_of(fresh) == here
    stale = _copy(tmp_path, "stale")
    for src in (stale / "workloads").glob("*.py"):
        src.touch()                       # an edit since the last build
    later = max(p.stat().st_mtime for p in (stale / "workloads").glob("*.py"))
    for ext in stale.rglob("*.so"):
        os.utime(ext, (later - 60, later - 60))
    assert build_of(stale) == "pure-python"
    p = subprocess.run([sys.executable, "bench/throughput.py", "--workers", "1", "--seconds", "3",
                        "--baseline", str(stale)], cwd=ROOT, capture_output=True, text=True, timeout=600)
    if here == "compiled":
        assert p.returncode == 64 and "build_ext --inplace" in p.stderr and not p.stdout
    else:     # both pure-Python: measured (the lines say so)
        assert p.returncode == 0, p.stderr
        assert {json.loads(line)["baseline_build"] for line in p.stdout.splitlines()} == {"pure-python"}



def test_the_floor_sends_keys_of_the_shape_a_run_gives_its_own(tmp_path):
    # the floor's commands are the harness's byte for byte in length: a run's key prefix (an
    # 8-character run id) and job:N, as a run of as many --jobs names its keys
    import multiprocessing as mp
    import time

    import redis

    sys.path.insert(0, str(ROOT))
    from bench.throughput import bare_loop, floor_keys
    from leasecheck.harness.run.host import default_store_bin
    from leasecheck.harness.settings.config import RunConfig
    from leasecheck.harness.stores.embedded import EmbeddedStore
    from leasecheck.protocol import key_prefix

    run = RunConfig().with_(jobs=12, run_id="0123abcd", key_prefix=key_prefix("0123abcd"))
    assert [len(k) for k in floor_keys(12)] == [len(k) for k in run.job_keys()]
    store = EmbeddedStore(default_store_bin(), tmp_path)
    store.start()
    try:
        seen: set[str] = set()
        with redis.Redis(host=store.host, port=store.port, decode_responses=True).monitor() as mon:
            loop = mp.Process(target=bare_loop, args=(store.port, 12, 2.0, mp.Queue()))
            loop.start()
            deadline = time.monotonic() + 30
            while len(seen) < 12 and time.monotonic() < deadline:
                command = mon.next_command()["command"].split()
                if command[0] == "SET":
                    seen.add(command[1])
            loop.join(30)
        assert seen == set(floor_keys(12))
    finally:
        store.stop()
