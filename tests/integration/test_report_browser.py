"""report.html as a person sees it: one short naive-del run with holder pauses, its report opened
in headless Chromium — no script error, lanes drawn, the faults shaded, every foreign release
marked and linked to its witness — and a screenshot to look at."""
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.integration.browser import Rendered, open_page, screenshot

pytestmark = pytest.mark.integration
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory) -> Path:
    tmp = tmp_path_factory.mktemp("report")
    p = subprocess.run([sys.executable, "-m", "leasecheck", "run", "--lease", "naive-del", "--time-limit", "6",
                        "--seed", "3", "--nemesis", "pause:holder", "--nemesis-interval", "2s",
                        "--results-dir", str(tmp / "results")],
                       capture_output=True, text=True, cwd=ROOT, timeout=180,
                       env={"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "HOME": str(tmp), "COLUMNS": "160"})
    assert p.returncode == 1, p.stdout + p.stderr           # naive-del: a foreign release
    run = (tmp / "results" / "latest").resolve()
    assert "report: " in p.stdout and (run / "report.html").is_file()
    return run


def timeline_problems(r: Rendered) -> list[str]:
    """Why the page does not show a timeline a person can read (empty when it does)."""
    problems = [f"script error: {e}" for e in r.errors]
    if r.rendered is None:
        problems.append("the page's script never finished drawing")
    elif r.rendered["lanes"] == 0 or 'class="lane-held"' not in r.dom:
        problems.append("empty timeline: no lane, or no claim drawn in any")
    return problems


def test_the_report_draws_lanes_shaded_faults_and_each_foreign_release(run_dir, tmp_path):
    results = json.loads((run_dir / "results.json").read_text())
    r = open_page(run_dir / "report.html", tmp_path / "profile")
    assert timeline_problems(r) == []
    assert r.rendered["lanes"] == 8 and r.rendered["faults"] == len(results["faults"]) >= 1
    assert r.rendered["foreign"] == results["foreign_releases"] >= 1
    assert r.dom.count('class="mark-foreign"') == results["foreign_releases"]
    assert r.dom.count('class="fault-band"') >= 3 * len(results["faults"])   # timeline, latency, rate
    assert 'class="lane-paused"' in r.dom                   # the paused holder's lane is hatched
    assert 'href="#witness-0"' in r.dom and 'id="witness-0"' in r.dom
    assert r.rendered["shapes"] < 5000                       # paths per lane and kind, not a node per event
    png = screenshot(run_dir / "report.html", run_dir / "report.png", tmp_path / "profile")
    head = png.read_bytes()[:24]
    assert head[:8] == b"\x89PNG\r\n\x1a\n" and int.from_bytes(head[16:20], "big") == 1400
    assert png.stat().st_size > 100_000                      # not a blank page
    print(f"screenshot: {png}")


def test_the_index_links_the_report(run_dir, tmp_path):
    index = run_dir.parent.parent / "index.html"
    html = index.read_text()
    assert f'href="{run_dir.parent.name}/{run_dir.name}/report.html"' in html and "INVALID" in html
    r = open_page(index, tmp_path / "profile")
    assert r.errors == [] and "naive-del" in r.dom


def test_a_killed_run_with_events_missing_is_drawn_too(run_dir, tmp_path):
    """The real run's history cut in the middle of a line, without results.json (a run killed
    before its check), through `leasecheck report`."""
    cut = tmp_path / "results" / "naive-del" / run_dir.name
    shutil.copytree(run_dir, cut, ignore=shutil.ignore_patterns("results.json", "witness.*", "report.*"))
    history = (cut / "history.jsonl").read_bytes()
    (cut / "history.jsonl").write_bytes(history[:len(history) // 2])
    p = subprocess.run([sys.executable, "-m", "leasecheck", "report", str(cut)], capture_output=True, text=True,
                       cwd=ROOT, timeout=60)
    assert p.returncode == 0, p.stderr
    r = open_page(cut / "report.html", tmp_path / "profile")
    assert timeline_problems(r) == [] and "NOT CHECKED" in r.dom and "no run_end" in r.dom


def test_a_script_error_or_an_empty_timeline_is_caught(run_dir, tmp_path):
    """The checks above can fail: a page whose script throws, and one with nothing to draw."""
    broken = tmp_path / "broken.html"
    broken.write_text((run_dir / "report.html").read_text().replace(
        "</body>", "<script>null.boom();</script></body>"))
    problems = timeline_problems(open_page(broken, tmp_path / "profile"))
    assert problems and all("script error" in p for p in problems) and "null" in problems[0]
    empty = tmp_path / "empty.html"
    html = (run_dir / "report.html").read_text()
    start = html.index('"lanes":[')
    empty.write_text(html[:start] + '"lanes":[],"unused":[' + html[start + len('"lanes":['):])
    assert timeline_problems(open_page(empty, tmp_path / "profile")) == [
        "empty timeline: no lane, or no claim drawn in any"]
