"""`leasecheck matrix` without running anything: the exit code of a set of cells, the cells read
from results, the Markdown / HTML / terminal tables, and the parsing of --lease / --nemesis."""
import re
from html.parser import HTMLParser

import pytest
from rich.console import Console

from leasecheck.harness.errors import UsageError
from leasecheck.result import Result
from leasecheck.harness.search.matrix import DEFAULT_LEASES
from leasecheck.harness.search.matrix import (CRASHED, INCONCLUSIVE, INVALID, NOT_RUN, VALID, Cell, cell_from_result,
                            exit_code, mixes, nemesis_of, split_list)
from leasecheck.harness.search.matrix_table import Header, html_page, markdown, markdown_table, rich_table, write


def _cell(lease, mix, verdict, run_dir=None, reason="", **counts):
    base = {"foreign_releases": 0, "token_reuse": 0, "early_loss": 0, "overlap": 0, "found_nothing": 0}
    return Cell(lease, mix, verdict, run_dir, {**base, **counts}, reason)


@pytest.mark.parametrize("verdicts,code", [
    ([VALID, VALID], 0),
    ([VALID, INVALID], 1),
    ([INCONCLUSIVE, INVALID, VALID], 1),          # a violation wins over doubt
    ([VALID, INCONCLUSIVE], 2),
    ([VALID, CRASHED], 2),                         # a harness that failed tested nothing: not 0
    ([VALID, NOT_RUN], 2),                         # an interrupted matrix is not a passing one
    ([CRASHED, INVALID], 1),
])
def test_exit_code(verdicts, code):
    assert exit_code([_cell(f"l{i}", "none", v) for i, v in enumerate(verdicts)]) == code


def test_cells_from_results(tmp_path):
    bad = cell_from_result("naive-del", "pause:holder", Result.from_json({
        "valid": False, "foreign_releases": 3, "token_reuse": {"attempts": 0}, "early_loss": {"count": 0},
        "overlap": {"count": 7}, "releases_found_nothing": 2, "reasons": ["3 foreign release(s)", "x"]}, tmp_path))
    assert (bad.verdict, bad.counts["foreign_releases"], bad.counts["overlap"], bad.reason) == \
        (INVALID, 3, 7, "3 foreign release(s)")
    doubt = cell_from_result("token-cas", "clock:store", Result.from_json(
        {"valid": "unknown", "reasons": ["fault 0 clock:store did not take effect"]}, tmp_path))
    assert doubt.verdict == INCONCLUSIVE and doubt.reason.startswith("fault 0 clock:store")
    good = cell_from_result("token-cas", "none", Result.from_json({"valid": True, "reasons": ["all held"]}, tmp_path))
    assert bad.run_dir == tmp_path
    assert good.verdict == VALID and good.reason == "" and good.counts["foreign_releases"] == 0


def _cells(tmp_path):
    return [
        _cell("naive-del", "none", VALID, tmp_path / "naive-del" / "A", overlap=0, found_nothing=1),
        _cell("naive-del", "pause:holder", INVALID, tmp_path / "naive-del" / "B", foreign_releases=4),
        _cell("token-cas", "none", VALID, tmp_path / "token-cas" / "C", overlap=2, found_nothing=3),
        _cell("token-cas", "pause:holder", INCONCLUSIVE, tmp_path / "token-cas" / "D",
              reason="fault 1 pause:holder did not take effect | measured 0 s"),
    ]


def _header(code=1):
    return Header(command="leasecheck matrix --lease naive-del,token-cas", when="2026-12-01 12:00 UTC",
                  machine="x86_64, 2 cores, Python 3.11.7", seed=7, exit_code=code)


def test_markdown_table_rows_columns_and_relative_links(tmp_path):
    md = markdown_table(_cells(tmp_path), base=tmp_path)
    lines = md.splitlines()
    assert lines[0] == "| lease | `none` | `pause:holder` |" and lines[1] == "|---|---|---|"
    naive, token = lines[2], lines[3]
    assert naive.startswith("| `naive-del` | **VALID**: overlap 0, 1 release(s) found nothing ([run](naive-del/A/), "
                            "[report](naive-del/A/report.html)) | **INVALID**: 4 foreign release(s)")
    assert "[report](naive-del/B/report.html)" in naive
    assert "**INCONCLUSIVE**: fault 1 pause:holder did not take effect \\| measured 0 s" in token
    assert all(len(re.split(r"(?<!\\)\|", line)) == 5 for line in lines)   # 3 columns: a reason's pipe is escaped


def test_markdown_without_links_and_with_the_header(tmp_path):
    assert "](" not in markdown_table(_cells(tmp_path))
    doc = markdown(_cells(tmp_path), _header(), tmp_path)
    assert doc.startswith("# leasecheck matrix, 2026-12-01 12:00 UTC\n")
    assert "`leasecheck matrix --lease naive-del,token-cas`" in doc
    assert "Seed 7 in every cell" in doc and "Exit code 1 (at least one cell INVALID)" in doc


class _Cells(HTMLParser):
    def __init__(self):
        super().__init__()
        self.tds, self.links, self.external = [], [], []
        self._in = None

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "td":
            self._in = [a.get("class"), ""]
            self.tds.append(self._in)
        if tag == "a":
            self.links.append(a["href"])
        if tag in ("script", "link", "img") or (a.get("src") or "").startswith("http"):
            self.external.append(tag)

    def handle_endtag(self, tag):
        if tag == "td":
            self._in = None

    def handle_data(self, data):
        if self._in is not None:
            self._in[1] += data


def test_html_page_is_self_contained_with_a_class_per_verdict(tmp_path):
    page = html_page(_cells(tmp_path), _header(), tmp_path)
    p = _Cells()
    p.feed(page)
    assert [c for c, _ in p.tds] == ["VALID", "INVALID", "VALID", "INCONCLUSIVE"]
    assert p.tds[1][1].startswith("INVALID 4 foreign release(s)")
    assert "naive-del/B/report.html" in p.links and "token-cas/D/" in p.links
    assert not p.external and "http" not in page            # opens offline
    assert "measured 0 s" in page and "<script" not in page


def test_write_puts_both_files_in_the_results_dir(tmp_path):
    md, page = write(_cells(tmp_path), _header(), tmp_path, "20261201T120000Z")
    assert md == tmp_path / "matrix-20261201T120000Z.md" and page.suffix == ".html"
    assert "[run](token-cas/C/)" in md.read_text() and 'href="token-cas/C/report.html"' in page.read_text()


def test_terminal_table_has_every_cell(tmp_path):
    console = Console(width=200, record=True, force_terminal=False)
    console.print(rich_table(_cells(tmp_path)))
    text = console.export_text()
    assert re.search(r"naive-del .*VALID .*INVALID", text)
    assert "4 foreign release(s)" in text and "INCONCLUSIVE" in text


def test_lists_and_mixes():
    assert split_list(("naive-del,token-cas", " fixed-token "), "--lease") == ["naive-del", "token-cas", "fixed-token"]
    assert mixes(("pause:holder", "latency, pause", "none")) == ["pause:holder", "latency,pause", "none"]
    assert nemesis_of("none") is None and nemesis_of("latency,pause") == "latency,pause"
    with pytest.raises(UsageError, match="named twice"):
        split_list(("token-cas", "token-cas"), "--lease")
    with pytest.raises(UsageError, match="--nemesis none for a column without faults"):
        mixes(("pause", " , "))
    with pytest.raises(UsageError, match="named twice"):
        mixes(("pause,latency", "pause, latency"))


def test_not_run_cell_says_why(tmp_path):
    md = markdown_table([_cell("token-cas", "none", NOT_RUN)])
    assert "**NOT RUN**: the matrix stopped first" in md


def test_the_default_rows_need_no_optional_package():
    assert not {"python-redis-lock", "pottery-redlock", "pottery-redlock-n"} & set(DEFAULT_LEASES)
