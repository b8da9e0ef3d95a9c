"""``bench/scale.py`` with arguments ``leasecheck run`` refuses ends with the run's one-line reason,
not a traceback about a results file that was never written."""
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_the_scale_bench_passes_on_a_refusal_in_one_line():
    p = subprocess.run([sys.executable, "bench/scale.py", "--workers", "0", "--time-limit", "1s"],
                       cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert p.returncode == 1 and p.stdout == "", p.stdout + p.stderr
    assert p.stderr.strip().splitlines() == [
        "bench/scale.py: leasecheck run exited 64 without a run to check: "
        "leasecheck: --workers 0: need at least 1 worker process"], p.stderr
