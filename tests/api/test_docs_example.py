"""The Python API as its documentation shows it: every ``python`` block of
docs/how-to/python-api.md, run in order in one namespace from a fresh working directory (the
examples use the default, relative ``results`` directory, as a user's script would)."""
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "how-to" / "python-api.md"


def blocks() -> list[str]:
    return re.findall(r"```python\n(.*?)```", PAGE.read_text(), re.S)


def test_the_page_covers_every_function():
    text = "\n".join(blocks())
    for name in ("leasecheck.run(", "leasecheck.check(", "leasecheck.hunt(", "leasecheck.shrink(",
                 "leasecheck.matrix(", "leasecheck.Result.load("):
        assert name in text, name


@pytest.mark.integration
def test_the_documented_examples_run(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    namespace: dict = {}
    for n, code in enumerate(blocks(), 1):
        exec(compile(code, f"{PAGE.name} block {n}", "exec"), namespace)   # noqa: S102 - the docs' own code
    out = capsys.readouterr().out
    assert "ttl" in out and "soon" in out          # the bad-input block printed its one line
    runs = list((tmp_path / "results").rglob("results.json"))
    assert len(runs) >= 4                           # run, hunt, shrink replays, matrix cells: under ./results
    assert (tmp_path / "results" / "index.html").is_file()
