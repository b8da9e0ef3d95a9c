"""`leasecheck gc --keep N`: the newest N runs of each scenario stay, `latest`'s target and runs
with a fault ledger always stay, `--dry-run` removes nothing."""
import subprocess
import sys

from tests.conftest import ROOT


def _runs(results, scenario, n):
    made = []
    for i in range(n):
        d = results / scenario / f"2026120{i + 1}T100000.000000Z"
        d.mkdir(parents=True)
        (d / "history.jsonl").write_text("x" * 1000)
        made.append(d)
    return made


def _gc(results, *args):
    return subprocess.run([sys.executable, "-m", "leasecheck", "gc", "--results-dir", str(results), *args],
                          capture_output=True, text=True, cwd=ROOT, timeout=60)


def test_gc_keeps_the_newest_per_scenario_and_the_protected_runs(tmp_path):
    results = tmp_path / "results"
    a = _runs(results, "token-cas", 4)
    b = _runs(results, "naive-del", 2)
    (results / "latest").symlink_to(a[0].relative_to(results))          # the oldest of token-cas
    (a[1] / "faults-active.json").write_text("[]")                       # a run with a ledger
    (results / "token-cas" / "notes").mkdir()                            # not a run: untouched
    (results / "index.html").write_text("")

    dry = _gc(results, "--keep", "1", "--dry-run")
    assert dry.returncode == 0, dry.stderr
    assert f"would remove {a[2]}" in dry.stdout and f"would remove {b[0]}" in dry.stdout
    assert all(d.exists() for d in a + b)                                 # nothing removed

    p = _gc(results, "--keep", "1")
    assert p.returncode == 0, p.stderr
    assert "removed 2 run directories" in p.stdout
    assert [d.exists() for d in a] == [True, True, False, True]
    assert [d.exists() for d in b] == [False, True]
    assert (results / "token-cas" / "notes").is_dir() and (results / "index.html").exists()
    assert "results/latest points to it" in p.stdout and "faults-active.json" in p.stdout


def test_gc_refuses_keep_zero(tmp_path):
    _runs(tmp_path, "token-cas", 1)
    p = _gc(tmp_path, "--keep", "0")
    assert p.returncode == 64 and "--keep 1" in p.stderr and len(p.stderr.strip().splitlines()) == 1
    assert (tmp_path / "token-cas").is_dir()
