"""CI runs the README's test command exactly: the quick start's line that runs the test suite is
`.ci/run`'s last command (change the two together)."""
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _readme_test_command() -> str:
    blocks = re.findall(r"```\n(.*?)```", (ROOT / "README.md").read_text(), re.S)
    (line,) = [b.strip() for b in blocks if "pytest" in b and "'.[test]'" in b]
    return line


def test_ci_runs_the_readme_test_command():
    ci = [line for line in (ROOT / ".ci" / "run").read_text().splitlines() if line.strip() and not line.startswith("#")]
    assert ci[-1] == _readme_test_command()

