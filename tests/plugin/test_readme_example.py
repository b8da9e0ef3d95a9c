"""The README's pytest-plugin example, run as a user runs it: its code block written to a test file
next to examples/my_lease.py and collected by a fresh pytest that finds the fixture through the
installed entry point. It fails when the README example, the fixture or the entry point breaks."""
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def readme_example() -> str:
    """The README's one Python block that uses the fixture."""
    blocks = re.findall(r"```python\n(.*?)```", (ROOT / "README.md").read_text(), re.S)
    found = [b for b in blocks if "leasecheck_run" in b and "def test_" in b]
    assert len(found) == 1, f"expected one README block with a leasecheck_run test, found {len(found)}"
    return found[0]


@pytest.mark.integration
def test_the_readme_example_passes_in_a_fresh_pytest(tmp_path):
    (tmp_path / "my_lease.py").write_text((ROOT / "examples" / "my_lease.py").read_text())
    (tmp_path / "test_my_lease.py").write_text(readme_example())
    p = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-rA",
                        "--basetemp", str(tmp_path / "basetemp"), "test_my_lease.py"],
                       cwd=tmp_path, capture_output=True, text=True, timeout=180)
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-2000:]
    assert "1 passed" in p.stdout
    runs = list((tmp_path / "basetemp").rglob("results.json"))
    assert len(runs) == 1    # one real run, stored under the test's tmp_path
