"""One `check_and_save` — the verdict, the witness, timeline.json, report.html and the index —
opens the history once and parses each of its lines once, for a run of one store and for a run
of several store nodes: the report draws what the check gathered in its pass
(`checkers/measures/timeline.py`), and every node is measured from that same pass
(`checkers/model/nodes.NodeFeed`). Every open of a file anywhere in the process is counted."""
import builtins
import io
import json
import re
import shutil
from pathlib import Path

import leasecheck.checkers.read.history as history_mod
from leasecheck.harness.run.pipeline import check_and_save
from tests.checkers.test_streaming import _generate

ROOT = Path(__file__).resolve().parents[2]
STAMP = "20261201T000000.000000Z"


def _count(monkeypatch) -> tuple[dict, dict]:
    """Opens per file name (every `open`, `io.open` and `Path.open` in the process) and the
    history's parses: `loads` by the stream (a line as a typed record, or as a dict when it is
    none of those), `look_ahead` by the raw scan for one word."""
    opened: dict[str, int] = {}
    parsed = {"loads": 0, "look_ahead": 0}
    real_open, real_loads, real_parse = builtins.open, history_mod._loads, history_mod._parse_event
    real_record, real_native = history_mod._decode_record, history_mod._NATIVE

    def counted_open(file, *args, **kw):
        if isinstance(file, (str, Path)):
            opened[Path(file).name] = opened.get(Path(file).name, 0) + 1
        return real_open(file, *args, **kw)

    def counted_loads(line):
        parsed["loads"] += 1
        return real_loads(line)

    def counted_record(line):
        record = real_record(line)
        parsed["loads"] += 1
        return record

    def counted_native(line):       # (the C reader, where the checker runs compiled: None leaves the line)
        record = real_native(line)
        parsed["loads"] += record is not None
        return record

    def counted_parse(line):
        parsed["look_ahead"] += 1
        return real_parse(line)
    monkeypatch.setattr(builtins, "open", counted_open)
    monkeypatch.setattr(io, "open", counted_open)
    monkeypatch.setattr(history_mod, "_loads", counted_loads)
    monkeypatch.setattr(history_mod, "_decode_record", counted_record)
    monkeypatch.setattr(history_mod, "_parse_event", counted_parse)
    if real_native is not None:
        monkeypatch.setattr(history_mod, "_NATIVE", counted_native)
    return opened, parsed


def _page_data(run: Path) -> dict:
    html = (run / "report.html").read_text()
    m = re.search(r'<script type="application/json" id="report-data">(.*?)</script>', html, re.S)
    return json.loads(m.group(1))


def test_a_whole_check_and_save_of_a_run_of_one_store_reads_its_history_once(tmp_path, monkeypatch):
    run = tmp_path / "results" / "bench" / STAMP
    _generate()(run, 20_000)
    shutil.rmtree(run / "history.d")
    lines = sum(1 for _ in open(run / "history.jsonl", "rb"))
    opened, parsed = _count(monkeypatch)
    result = check_and_save(run)
    assert result.data["valid"] is True and result.data["ops"] > 5_000, result.data["reasons"]
    assert opened.get("history.jsonl") == 1 and parsed == {"loads": lines, "look_ahead": 0}
    assert opened.get("audit.log") == 1
    # the pages were written, from what the check gathered
    assert {"results.json", "timeline.json"} <= set(opened)
    assert (run / "report.html").is_file() and (run.parent.parent / "index.html").is_file()
    data = _page_data(run)
    assert len(data["lanes"]) == 16 and data["keys"] and data["latency"]["acquire:ok"]
    timeline = json.loads((run / "timeline.json").read_text())
    assert timeline["events"] == lines and timeline["history_bytes"] == (run / "history.jsonl").stat().st_size


def test_a_whole_check_and_save_of_a_run_of_several_nodes_reads_its_history_once(tmp_path, monkeypatch):
    saved = ROOT / "tests" / "checkers" / "redlock" / "clock-jump-bad"
    run = tmp_path / "results" / "redlock" / STAMP
    shutil.copytree(saved, run)
    text = (run / "history.jsonl").read_bytes().splitlines()
    faults = sum(b'"fault_start"' in line for line in text)
    opened, parsed = _count(monkeypatch)
    result = check_and_save(run)
    assert result.data["valid"] is False and result.data["mutual_exclusion"]["violations"] >= 1
    assert opened.get("history.jsonl") == 1
    assert parsed == {"loads": len(text), "look_ahead": faults} and faults >= 1   # the clock steps, looked ahead
    assert all(opened.get(f"audit-node{i}.log") == 1 for i in range(1, 6)), opened
    assert "timeline.json" in opened and (run / "report.html").is_file()
    assert _page_data(run)["lanes"] and "Store nodes" in (run / "report.html").read_text()


def test_the_counts_can_fail_a_report_that_reads_the_history_itself(tmp_path, monkeypatch):
    """Without the check's timeline (a run never checked) the report reads the history: counted."""
    run = tmp_path / "results" / "bench" / STAMP
    _generate()(run, 2_000)
    shutil.rmtree(run / "history.d")
    check_and_save(run)
    (run / "timeline.json").unlink()
    from leasecheck.harness.reports.html import write_report
    opened, parsed = _count(monkeypatch)
    write_report(run)
    assert opened.get("history.jsonl") == 1 and parsed["loads"] == sum(1 for _ in open(run / "history.jsonl", "rb"))


def test_drawing_a_checked_run_again_reads_its_timeline_not_its_history(tmp_path, monkeypatch):
    """`leasecheck report` of a checked run: timeline.json, and the history is not opened."""
    run = tmp_path / "results" / "bench" / STAMP
    _generate()(run, 2_000)
    shutil.rmtree(run / "history.d")
    check_and_save(run)
    first = _page_data(run)
    from leasecheck.harness.reports.html import write_report
    opened, parsed = _count(monkeypatch)
    write_report(run)
    assert "history.jsonl" not in opened and parsed["loads"] == 0 and opened.get("timeline.json") == 1
    assert _page_data(run) == first


def test_a_whole_check_and_save_of_a_replicated_run_with_replica_copies_reads_its_history_once(tmp_path, monkeypatch):
    """Copies' owners are settled in the same pass (`nodes._Shared`): no second pass over the
    history for the nodes that hold copies. Each node's audit is read by its two models."""
    saved = ROOT / "tests" / "checkers" / "replicated" / "failover-naive-del-foreign-bad"
    run = tmp_path / "results" / "replicated" / STAMP
    shutil.copytree(saved, run)
    text = (run / "history.jsonl").read_bytes().splitlines()
    faults = sum(b'"fault_start"' in line for line in text)
    opened, parsed = _count(monkeypatch)
    result = check_and_save(run)
    assert result.data["valid"] is False and result.data["foreign_releases"] == 2
    assert result.data["audit"]["nodes"]["node2"]["copies"] >= 1          # copies whose owners decide the count
    assert opened.get("history.jsonl") == 1
    assert parsed == {"loads": len(text), "look_ahead": faults} and faults >= 1
    assert all(opened.get(f"audit-node{i}.log") == 2 for i in (1, 2)), opened
    assert "timeline.json" in opened and (run / "report.html").is_file()
    assert _page_data(run)["lanes"] and "Store nodes" in (run / "report.html").read_text()


def test_a_run_without_clock_samples_still_reads_its_history_once(tmp_path, monkeypatch):
    """The store clock is then estimated from the history's head, kept for the pass
    (`measure._Prefix`), not from a pass of its own."""
    run = tmp_path / "results" / "bench" / STAMP
    _generate()(run, 20_000)
    shutil.rmtree(run / "history.d")
    (run / "store-clock.jsonl").unlink()
    lines = sum(1 for _ in open(run / "history.jsonl", "rb"))
    opened, parsed = _count(monkeypatch)
    result = check_and_save(run)
    assert result.data["ops"] > 5_000 and any("no store-clock samples" in p for p in result.data["problems"])
    assert result.data["valid"] is True, result.data["reasons"]
    assert opened.get("history.jsonl") == 1 and parsed == {"loads": lines, "look_ahead": 0}


def test_shrink_reads_the_recorded_run_once_to_judge_it_and_find_its_faults(tmp_path, monkeypatch):
    """`leasecheck shrink RUN_DIR`: the faults that fired come from the one check of the run
    (results.json ``faults``), not from a scan of its history of their own."""
    from leasecheck.harness.search.shrink_run import read_run
    saved = ROOT / "tests" / "checkers" / "redlock" / "clock-jump-bad"
    run = tmp_path / "results" / "redlock" / STAMP
    shutil.copytree(saved, run)
    started = {json.loads(line)["n"] for line in (run / "history.jsonl").read_text().splitlines()
               if '"fault_start"' in line}
    opened, parsed = _count(monkeypatch)
    rec = read_run(run, lambda d, parts: check_and_save(d, parts=parts).to_json())
    assert opened.get("history.jsonl") == 1 and parsed["loads"] == len((run / "history.jsonl").read_bytes().splitlines())
    assert {f.n for f in rec.faults} == started and started and "mutual_exclusion" in rec.violated
