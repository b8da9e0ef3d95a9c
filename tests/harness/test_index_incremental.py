"""results/index.html is written after every run without reading every stored run again: only a
run whose config.json or results.json changed is read; the page is the one a full read gives."""
import json
from pathlib import Path

import leasecheck.harness.rundirs.runs as runs
from leasecheck.harness.reports.html import write_index
from leasecheck.harness.reports.html.index import ROWS
from leasecheck.harness.rundirs.runs import list_runs

CONFIG = {"lease": "naive-del", "scenario": "hand", "nemesis": "pause:holder"}


def _run(root: Path, stamp: str, valid=None) -> Path:
    run = root / "hand" / stamp
    run.mkdir(parents=True)
    (run / "config.json").write_text(json.dumps(CONFIG))
    if valid is not None:
        (run / "results.json").write_text(json.dumps({"valid": valid, "faults": [{"fault": "pause"}]}))
    return run


def _counting_reads(monkeypatch) -> list[str]:
    """The run directories whose files `runs` reads, one entry per file read."""
    read, real = [], runs.read_object

    def counted(path):
        read.append(Path(path).parent.name)
        return real(path)
    monkeypatch.setattr(runs, "read_object", counted)
    return read


def _table(html: str) -> str:
    return html[html.index("<table"):html.index("</table>")]


def test_each_run_is_read_once_and_again_only_when_its_files_change(tmp_path, monkeypatch):
    root = tmp_path / "results"
    for i in range(5):
        _run(root, f"20261201T00000{i}.000000Z", valid=True)
    read = _counting_reads(monkeypatch)
    first = write_index(root).read_text()
    assert sorted(set(read)) == [f"20261201T00000{i}.000000Z" for i in range(5)]
    assert (root / ROWS).is_file()

    read.clear()
    new = _run(root, "20261201T000009.000000Z")            # a run that ended, not checked yet
    second = write_index(root).read_text()
    assert set(read) == {new.name}                          # the five others came from the cache
    assert second.count("<tr>") == first.count("<tr>") + 1 and "not checked" in second

    read.clear()
    (new / "results.json").write_text(json.dumps({"valid": False}))   # now it is checked
    third = write_index(root).read_text()
    assert set(read) == {new.name}
    assert "not checked" not in third and "INVALID" in third

    read.clear()
    assert write_index(root).read_text() == third and read == []      # nothing changed: nothing read


def test_the_incremental_page_equals_a_full_read_and_survives_a_damaged_cache(tmp_path):
    root = tmp_path / "results"
    _run(root, "20261201T000000.000000Z", valid=True)
    _run(root, "20261201T000001.000000Z", valid="unknown")
    write_index(root)
    gone = _run(root, "20261201T000002.000000Z", valid=False)
    html = write_index(root).read_text()
    rows = list_runs(root)                                   # the full read `leasecheck ls` does
    for r in rows:
        assert f"<td>{r.time}</td><td>{r.scenario}</td><td>{r.lease}</td><td>{r.faults}</td>" in html
    assert [v for v in ("VALID", "INCONCLUSIVE", "INVALID") if f">{v}<" in html] == ["VALID", "INCONCLUSIVE", "INVALID"]

    (root / ROWS).write_text("{not json")
    assert _table(write_index(root).read_text()) == _table(html)

    for f in gone.iterdir():                                 # a run removed (gc): its row goes
        f.unlink()
    gone.rmdir()
    html = write_index(root).read_text()
    assert gone.name not in html and html.count("<tr>") == 3
    assert gone.relative_to(root).as_posix() not in json.loads((root / ROWS).read_text())
