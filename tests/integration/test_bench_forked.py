"""``bench/forked_loops.py`` prints, per mode, the loops' CPU, scheduler runs and memory per 1,000
store operations and a median line per mode; ``bench/worker_threads.py`` prints a live run's
workers and their threads; ``bench/instructions.py`` counts each loop's instructions per
operation under valgrind. (The numbers are the benchmarks' to report, in bench/RESULTS.md; this
checks that they report them.)"""
import json
import statistics
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration
ROOT = Path(__file__).resolve().parents[2]


def test_the_forked_loops_print_every_mode_and_its_median():
    p = subprocess.run([sys.executable, "bench/forked_loops.py", "--processes", "1", "--seconds", "5",
                        "--repeat", "1", "--modes", "bare,no-lines", "--sessions"],
                       cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    lines = [json.loads(line) for line in p.stdout.splitlines()]
    runs, medians = lines[:2], lines[2:]
    assert [r["mode"] for r in runs] == ["bare", "no-lines"]
    assert all(r["sessions"] is True for r in runs)     # each loop in a session of its own
    for r in runs:
        assert r["cpu_ms_per_kop"] > 0 and r["ops_per_s"] > 0 and r["runs_per_kop"] > 0
        assert r["Rss_kB"] > 0 and "Private_Dirty_kB" in r and "Shared_Dirty_kB" in r
        assert r["build"] in ("compiled", "pure-python")
    assert [m["mode"] for m in medians] == ["bare", "no-lines"]
    assert medians[0]["ratio_to_bare"] == 1.0
    assert medians[1]["cpu_ms_per_kop_median"] == runs[1]["cpu_ms_per_kop"]


def test_side_by_side_each_mode_runs_beside_the_first_against_a_store_of_its_own():
    # with --sessions: every loop of both sides leads a session of its own, as the harness's workers do
    p = subprocess.run([sys.executable, "bench/forked_loops.py", "--processes", "2", "--seconds", "5",
                        "--repeat", "2", "--modes", "bare,bare-lease", "--beside", "--sessions"],
                       cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    *rounds, summary = [json.loads(line) for line in p.stdout.splitlines()]
    assert [(r["mode"], r["beside"], r["round"]) for r in rounds] == [("bare-lease", "bare", 0), ("bare-lease", "bare", 1)]
    assert all(r["sessions"] is True and r["loops_in_own_session"] == 2 for r in rounds)
    assert [r["first_started"] for r in rounds] == ["first", "beside"]      # the other side first every other round
    for r in rounds:
        # each side's operations are its own store's count: both sides made some
        assert r["first_ops"] > 0 and r["beside_ops"] > 0
        assert r["ratio"] == round(r["beside_cpu_ms_per_kop"] / r["first_cpu_ms_per_kop"], 3)
    ratios = [r["ratio"] for r in rounds]
    assert summary["ratio_median"] == round(statistics.median(ratios), 3)
    assert summary["ratio_range"] == [min(ratios), max(ratios)]


@pytest.mark.slow
def test_side_by_side_with_another_checkout_forks_each_side_from_its_own():
    # this checkout beside itself: each side's loops from a parent started from its checkout
    p = subprocess.run([sys.executable, "bench/forked_loops.py", "--processes", "2", "--seconds", "5",
                        "--repeat", "1", "--modes", "bare,bare", "--beside", "--other", str(ROOT)],
                       cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    (run, summary) = [json.loads(line) for line in p.stdout.splitlines()]
    assert run["other"] == summary["other"] == str(ROOT)
    assert run["sessions"] is False and run["loops_in_own_session"] == 0      # without --sessions, none leads one
    assert run["other_build"] == run["build"] in ("compiled", "pure-python")
    assert run["first_ops"] > 0 and run["beside_ops"] > 0
    assert run["ratio"] == round(run["beside_cpu_ms_per_kop"] / run["first_cpu_ms_per_kop"], 3)
    assert summary["ratio_median"] == run["ratio"]


def test_side_by_side_refuses_a_checkout_whose_script_cannot_fork_a_side(tmp_path):
    (tmp_path / "bench").mkdir()
    (tmp_path / "bench" / "forked_loops.py").write_text("# an older copy, without --side\n")
    p = subprocess.run([sys.executable, "bench/forked_loops.py", "--processes", "2", "--modes", "bare,slot", "--beside",
                        "--other", str(tmp_path)], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert p.returncode == 64 and p.stdout == ""
    assert p.stderr.strip().count("\n") == 0 and "copy this checkout's bench/forked_loops.py" in p.stderr


def test_side_by_side_refuses_an_odd_count_in_one_line():
    p = subprocess.run([sys.executable, "bench/forked_loops.py", "--processes", "3", "--modes", "bare,slot", "--beside"],
                       cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert p.returncode == 64 and p.stdout == ""
    assert p.stderr.strip().count("\n") == 0 and "even --processes" in p.stderr


def test_the_forked_loops_refuse_an_unknown_mode_in_one_line():
    p = subprocess.run([sys.executable, "bench/forked_loops.py", "--modes", "bare,nothing"],
                       cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert p.returncode == 64 and p.stdout == ""
    assert p.stderr.strip().count("\n") == 0 and "plain-client" in p.stderr


def test_the_worker_threads_of_a_live_run_are_listed():
    p = subprocess.run([sys.executable, "bench/worker_threads.py", "--workers", "1", "--seconds", "8"],
                       cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    head, *threads = [json.loads(line) for line in p.stdout.splitlines()]
    assert head["workers"] == 1 and head["ops_per_s"] > 0 and head["Private_Dirty_kB"] > 0
    assert {t["thread"] for t in threads} >= {"t0", "t1"}       # the main thread and the flusher at least
    assert max(t["cpu_ms_per_kop"] for t in threads) > 0


@pytest.mark.slow
def test_the_instruction_counts_print_each_mode_against_the_first():
    p = subprocess.run([sys.executable, "bench/instructions.py", "--modes", "bare,bare-lease", "--seconds", "1",
                        "--top", "3", "--ll", "256"], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stderr
    bare, lease, grew = [json.loads(line) for line in p.stdout.splitlines()]
    assert (bare["mode"], lease["mode"]) == ("bare", "bare-lease")
    assert bare["ratio_to_bare"] == 1.0 and bare["ops"][1] > bare["ops"][0] > 0
    # a redis-py command is tens of thousands of interpreter instructions; the lease adds little
    assert 20_000 < bare["instructions_per_op"] < 2_000_000
    assert 0.9 < lease["ratio_to_bare"] < 1.5
    # with the caches simulated: misses of a 256 kB last level, a fraction of the instructions
    assert bare["ll_kB"] == 256 and 0 < bare["ll_misses_per_op"] < bare["instructions_per_op"] / 10
    assert bare["ll_ratio_to_bare"] == 1.0 and lease["ll_misses_per_op"] > 0
    assert grew["mode"] == "bare-lease" and len(grew["grew_most"]) == 3
    # named by function, with the caches simulated too (cg_annotate then shows several counts a row)
    assert all("(" not in g["function"].split(":")[0] for g in grew["grew_most"])


def test_the_instruction_counts_refuse_an_unknown_mode_in_one_line():
    p = subprocess.run([sys.executable, "bench/instructions.py", "--modes", "bare,nothing"],
                       cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert p.returncode == 64 and p.stdout == ""
    assert p.stderr.strip().count("\n") == 0 and "plain-client" in p.stderr
