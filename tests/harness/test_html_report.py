"""report.html and index.html from run directories written here by hand: what the page is given
to draw (the inline data), a killed run's open spans, and the bound that keeps a long run's
page small."""
import json
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from leasecheck.harness.reports.html import write_index, write_report
from leasecheck.checkers.measures.timeline import LANE_BUCKETS, PLOT_BUCKETS
from leasecheck.checkers.measures.grid import Grid, add

ROOT = Path(__file__).resolve().parents[2]
S = 1_000_000_000
CONFIG = {"lease": "naive-del", "workers": 2, "slots": 1, "jobs": 1, "ttl_s": 1.0, "ttl_ms": 1000,
          "time_limit_s": 5.0, "seed": 1, "scenario": "hand", "nemesis": "pause:holder"}
KEY = "lc:x:job:0"


def _page_data(html: str) -> dict:
    m = re.search(r'<script type="application/json" id="report-data">(.*?)</script>', html, re.S)
    return json.loads(m.group(1).replace("<\\/", "</"))


def _ev(t_s: float, process: str, type_: str, **kw) -> dict:
    return {"time": int(t_s * S), "process": process, "type": type_, **kw}


def _call(events, t0, t1, slot, f, attempt, type_="ok", **kw):
    events.append(_ev(t0, slot, "invoke", f=f, attempt=attempt, key=KEY))
    events.append(_ev(t1, slot, type_, f=f, attempt=attempt, key=KEY, **kw))


def _history() -> list[dict]:
    """w0 claims, works past its TTL while paused, and deletes w1's claim; w1's release then
    finds nothing."""
    e = [_ev(0, "harness", "run_start", config=CONFIG)]
    _call(e, 0.10, 0.11, "w0.s0", "acquire", "w0.s0.0", value=True)
    e.append(_ev(0.12, "w0.s0", "job_start", attempt="w0.s0.0", key=KEY))
    e.append(_ev(0.50, "nemesis", "fault_start", fault="pause", target="holder", n=0, requested={}))
    _call(e, 1.20, 1.21, "w1.s0", "acquire", "w1.s0.0", value=True)
    e.append(_ev(1.22, "w1.s0", "job_start", attempt="w1.s0.0", key=KEY))
    e.append(_ev(2.00, "nemesis", "fault_end", fault="pause", target="holder", n=0,
                 measured={"processes": ["w0"], "stopped_s": 1.5}))
    e.append(_ev(2.01, "w0.s0", "job_end", attempt="w0.s0.0", key=KEY))
    _call(e, 2.02, 2.03, "w0.s0", "release", "w0.s0.0", value=True)
    e.append(_ev(2.50, "w1.s0", "job_end", attempt="w1.s0.0", key=KEY))
    _call(e, 2.51, 2.52, "w1.s0", "release", "w1.s0.0", value=False)
    _call(e, 2.60, 2.61, "w1.s0", "acquire", "w1.s0.1", type_="fail", value=False)
    e.append(_ev(5.0, "harness", "run_end", reason="time-limit", stopped_at=int(5.0 * S)))
    return e


def _write(run: Path, events: list[dict], results: dict | None = None) -> Path:
    run.mkdir(parents=True)
    (run / "config.json").write_text(json.dumps(CONFIG))
    (run / "history.jsonl").write_text("".join(json.dumps(dict(x, index=i)) + "\n" for i, x in enumerate(events)))
    if results is not None:
        (run / "results.json").write_text(json.dumps(results))
    return run


RESULTS = {"valid": False, "reasons": ["1 foreign release(s): the first is attempt w0.s0.0's DEL"],
           "foreign_releases": 1, "walk_ins": 0, "certainty": {"foreign_releases": "certain (store audit)"},
           "foreign_releases_first": [{"attempt": "w0.s0.0", "victim": "w1.s0.0", "key": KEY, "command": "DEL",
                                       "time_s": 2.025, "line": 9}],
           "witness": {"kind": "foreign_release", "key": KEY, "summary": "A deleted B's claim",
                       "columns": ["Time (s)", "Worker A (w0.s0.0)", "Worker B (w1.s0.0)", "The key in the store"],
                       "rows": [{"time_s": 2.025, "cells": ["DEL deletes B's claim", "still working", "absent"]}],
                       "markdown": f"## Foreign release on `{KEY}`\n\nA deleted B's claim <b>\n\n"
                                   "| Time (s) | Worker A (w0.s0.0) | Worker B (w1.s0.0) | The key in the store |\n"
                                   "|---|---|---|---|\n| 2.025 | DEL deletes B's claim | still working | absent |\n"
                                   "\n## Reused holder token\n\nw0.s0.0 and w1.s0.0 used one token\n"}}


def test_the_page_draws_lanes_holders_faults_and_marks_each_release_kind(tmp_path):
    run = _write(tmp_path / "results" / "hand" / "20261201T000000.000000Z", _history(), RESULTS)
    html = write_report(run).read_text()
    data = _page_data(html)
    assert [lane["name"] for lane in data["lanes"]] == ["w0.s0", "w1.s0"]
    w0 = data["lanes"][0]
    b = data["lane_s"]
    # w0 held its claim from 0.11 s: within the 1 s TTL until 1.10 s, then past it until its release
    assert abs(w0["held"][0][0] * b - 0.11) <= b and abs(w0["held"][-1][1] * b - 1.10) <= 2 * b
    assert abs(w0["overdue"][0][0] * b - 1.10) <= 2 * b and abs(w0["overdue"][-1][1] * b - 2.03) <= 2 * b
    assert w0["job"] and w0["rel"]
    kinds = {m["kind"]: m for m in data["marks"]}
    assert kinds["foreign"]["lane"] == 0 and kinds["foreign"]["href"] == "#witness-0"
    assert kinds["nothing"]["lane"] == 1 and "found nothing" in kinds["nothing"]["text"]
    [fault] = data["faults"]
    assert (fault["t0"], fault["t1"], fault["processes"], fault["healed"]) == (0.5, 2.0, ["w0"], True)
    # the key's holder: w0 until its deadline, then w1 until w0's DEL removed w1's claim at 2.025 s
    [key] = data["keys"]
    holders = [(r[0] * b, r[1] * b, r[2]) for r in key["holder"]]
    assert holders[0][2] == 0 and holders[-1][2] == 1
    assert abs(holders[-1][1] - 2.025) <= 2 * b
    assert max(r[2] for r in key["jobs"]) == 2            # both jobs ran at once
    assert set(data["latency"]) == {"acquire:ok", "acquire:fail", "release:ok"}
    assert 'id="witness-0"' in html and "INVALID" in html and "<script src" not in html
    assert "<td>DEL deletes B's claim</td>" in html and 'id="witness-1"' in html   # tables, each heading
    assert "A deleted B's claim &lt;b&gt;" in html                                  # escaped
    assert "witness-0\">witness timeline</a>" in html                              # from the reason
    assert "http://" not in html.replace("http://www.w3.org/2000/svg", "")   # nothing to fetch


def test_a_killed_run_without_results_still_gets_a_page_with_its_open_spans(tmp_path):
    events = [x for x in _history() if x["time"] < 1.5 * S]            # killed at 1.5 s
    run = tmp_path / "run"
    (run / "history.d").mkdir(parents=True)
    for proc in ("harness", "nemesis", "w0", "w1"):
        (run / "history.d" / f"{proc}.jsonl").write_text(
            "".join(json.dumps(x) + "\n" for x in events if x["process"].split(".")[0] == proc))
    (run / "history.d" / "w1.jsonl").open("a").write('{"time": 14')  # torn last line
    html = write_report(run).read_text()
    data = _page_data(html)
    assert "no results.json" in html and "NOT CHECKED" in html and "no run_end" in html
    assert data["run_end"] is None and data["end_s"] == 1.22
    assert [lane["open"] for lane in data["lanes"]] == [1, 1]          # both still held a claim
    [fault] = data["faults"]
    assert fault["healed"] is False and fault["t1"] == 1.22            # shaded to the end
    assert "torn last line" in html


def test_a_long_run_is_drawn_with_a_bounded_number_of_shapes(tmp_path):
    """An hour of 12 slots claiming every 0.5 s (about 200k events) gives a page of bounded size."""
    e = [_ev(0, "harness", "run_start", config=CONFIG | {"time_limit_s": 3600.0, "workers": 12})]
    t = 0.0
    n = 0
    while t < 3600:
        for w in range(12):
            slot, att = f"w{w}.s0", f"w{w}.s0.{n}"
            base = t + w * 0.011
            _call(e, base, base + 0.001, slot, "acquire", att, value=w == n % 12)
            if w == n % 12:
                e.append(_ev(base + 0.002, slot, "job_start", attempt=att, key=KEY))
                e.append(_ev(base + 0.15, slot, "job_end", attempt=att, key=KEY))
                _call(e, base + 0.151, base + 0.152, slot, "release", att, value=n % 5 > 1)
        n += 1
        t += 0.5
        if n % 1000 == 0:
            e.append(_ev(t, "nemesis", "fault_start", fault="pause", target="holder", n=n))
            e.append(_ev(t + 2, "nemesis", "fault_end", fault="pause", target="holder", n=n,
                         measured={"processes": ["w3"]}))
    e.sort(key=lambda x: x["time"])
    run = _write(tmp_path / "long", e)
    started = time.monotonic()
    html = write_report(run).read_text()
    took = time.monotonic() - started
    data = _page_data(html)
    assert len(data["lanes"]) == 12 and data["end_s"] > 3599 and len(data["faults"]) == 7
    for lane in data["lanes"]:
        assert 0 < sum(len(lane[k]) for k in ("held", "overdue", "job")) <= 3 * LANE_BUCKETS
        assert len(lane["rel"]) <= LANE_BUCKETS and 0 < len(lane["nothing"]) <= LANE_BUCKETS
    assert all(len(points) <= 5 * PLOT_BUCKETS for points in data["latency"].values())
    assert all(len(r) <= PLOT_BUCKETS for r in data["rate"].values())
    assert len(data["marks"]) <= 2000 and data["marks_dropped"] > 0   # the rest: in their buckets
    assert len(html) < 4_000_000, len(html)
    print(f"{len(e)} events: report in {took:.1f} s, {len(html) / 1e6:.2f} MB")


def test_grid_doubling_keeps_the_covered_time():
    g = Grid(8, 10)
    v = g.array(int, add)
    g.cover(v, 5, 75)
    g.cover(v, 150, 300)       # past the end: the width doubles twice
    assert g.width == 40 and v == [35, 35, 0, 10, 40, 40, 40, 20]


def test_index_lists_the_runs_with_links_to_their_reports(tmp_path):
    root = tmp_path / "results"
    a = _write(root / "hand" / "20261201T000000.000000Z", _history(), RESULTS)
    _write(root / "other" / "20261201T000001.000000Z", _history())
    write_report(a)
    html = write_index(root).read_text()
    assert html.count("<tr>") == 3
    assert 'href="hand/20261201T000000.000000Z/report.html"' in html and "INVALID" in html
    assert "not checked" in html and "leasecheck report" in html


def _cli(*args, cwd):
    return subprocess.run([sys.executable, "-m", "leasecheck", *args], capture_output=True, text=True, cwd=cwd,
                          timeout=60)


@pytest.mark.slow   # the real command line in subprocesses
def test_leasecheck_report_rewrites_the_page_and_the_index_and_refuses_bad_input(tmp_path):
    root = tmp_path / "results"
    run = _write(root / "hand" / "20261201T000000.000000Z", _history(), RESULTS)
    p = _cli("report", str(run), cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    assert (run / "report.html").is_file() and (root / "index.html").is_file()
    (root / "index.html").unlink()
    p = _cli("report", "--results-dir", str(root), cwd=tmp_path)
    assert p.returncode == 0 and (root / "index.html").is_file()
    p = _cli("report", str(tmp_path / "nope"), cwd=tmp_path)
    assert p.returncode == 64 and p.stderr.count("\n") == 1 and "no such run directory" in p.stderr
    p = _cli("report", str(tmp_path), cwd=tmp_path)
    assert p.returncode == 64 and "no history.jsonl" in p.stderr


@pytest.mark.slow   # the real command line in subprocesses
def test_check_writes_the_report_and_the_index_and_gc_keeps_the_index_true(tmp_path):
    root = tmp_path / "results"
    old = _write(root / "hand" / "20261201T000000.000000Z", _history())
    new = _write(root / "hand" / "20261201T000001.000000Z", _history())
    for run in (old, new):
        p = _cli("check", str(run), cwd=tmp_path)
        assert p.returncode in (0, 1, 2), p.stderr
        assert (run / "report.html").is_file() and f"report: {run / 'report.html'}" in p.stdout
    index = (root / "index.html").read_text()
    assert old.name in index and new.name in index
    p = _cli("gc", "--keep", "1", "--results-dir", str(root), cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    index = (root / "index.html").read_text()
    assert old.name not in index and f"hand/{new.name}/report.html" in index


def test_text_from_the_history_cannot_end_the_page_script(tmp_path):
    e = _history()
    evil = "</script><script>document.title='owned'</script><!--"
    e.insert(-1, _ev(4.0, "w1.s0", "invoke", f="release", attempt="w1.s0.2", key=KEY))
    e.insert(-1, _ev(4.1, "w1.s0", "info", f="release", attempt="w1.s0.2", key=KEY, error=evil))
    html = write_report(_write(tmp_path / "run", e)).read_text()
    assert evil not in html
    [mark] = [m for m in _page_data(html)["marks"] if m["kind"] == "unknown"]
    assert evil in mark["text"]


def _checked_copy(saved: Path, run: Path) -> Path:
    """A saved run directory copied under ``run`` and checked there (results.json written)."""
    import shutil

    from leasecheck.checkers import check_run
    shutil.copytree(saved, run)
    (run / "results.json").write_text(json.dumps(check_run(run)))
    return run


def test_a_replicated_run_shows_its_nodes_the_failover_and_the_claims_lost_in_it(tmp_path):
    saved = ROOT / "tests" / "checkers" / "replicated" / "failover-lost-bad"
    html = write_report(_checked_copy(saved, tmp_path / "results" / "f" / "20261201T000000.000000Z")).read_text()
    summary = html[html.index('<section id="summary">'):html.index('<section id="timeline-section">')]
    # the terminal's failover line, judged, and each node's line
    assert ("<td>failover</td><td>INVALID</td><td>node1 -&gt; node2 (promoted at 4.761 s); 1 claim(s) lost in "
            "failover, 1 then held by another attempt (early loss, cause failover)</td>") in summary
    assert "<h3>Store nodes</h3>" in summary
    assert "<li><code>node2  2 claims (1 copy of a primary&#39;s), audit complete</code></li>" in summary
    # the lost claim, with who then won its key
    rows = re.findall(r"<tr><td>(.*?)</td><td>(.*?)</td><td>(.*?)</td><td>(.*?)</td><td>(.*?)</td><td>(.*?)</td></tr>",
                      summary[summary.index("Claims lost in failover"):])
    assert rows[0] == ("w0.s0.1", "leasecheck:b3fd5c8d:job:0", "node1 -&gt; node2", "3.04", "6.04",
                       "w1.s0.114 won it at 5.679 s")
    assert "<td>primary (node1)</td>" in summary                    # the node the fault acted on
    assert '— <a href="#witness-0">witness timeline</a>' in summary     # the reason links the failover witness
    assert "Claim lost in failover on <code>leasecheck:b3fd5c8d:job:0</code>" in html


def test_a_run_of_one_store_has_no_node_or_failover_parts(tmp_path):
    html = write_report(_write(tmp_path / "run", _history(), RESULTS)).read_text()
    assert "Store nodes" not in html and "Claims lost in failover" not in html and "<td>failover</td>" not in html


def test_a_foreign_release_on_a_node_names_that_nodes_audit(tmp_path):
    saved = ROOT / "tests" / "checkers" / "replicated" / "failover-naive-del-foreign-bad"
    html = write_report(_checked_copy(saved, tmp_path / "results" / "f" / "20261201T000000.000000Z")).read_text()
    (mark, *_) = [m for m in _page_data(html)["marks"] if m["kind"] == "foreign"]
    assert mark["text"].endswith("(audit-node2.log line 164)") and mark["href"] == "#witness-0"
