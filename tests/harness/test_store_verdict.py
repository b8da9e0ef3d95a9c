"""The store's broken promise shown as such: a run whose only failure is the store's reads
"INVALID (store)" in the matrix (its own style, still a failing exit code) and in the summary's
verdict line, in words that say it is about the store's configuration, not the lease; a VALID that
reached none of a relevant hazard says so in its verdict line."""
from rich.console import Console

from leasecheck.checkers.measures.hazards import hazard_words
from leasecheck.harness.reports.summary import STORE_WORDS, verdict_line
from leasecheck.harness.search.matrix import INVALID, INVALID_STORE, VALID, Cell, cell_from_result, exit_code
from leasecheck.harness.search.matrix_table import html_page, Header, markdown_table, rich_table, what
from leasecheck.result import Result

LOSS = {"valid": False, "foreign_releases": 0, "token_reuse": {"attempts": 0}, "early_loss": {"count": 2},
        "overlap": {"count": 1}, "releases_found_nothing": 0,
        "reasons": ["2 claim(s) lost before the lease's deadline while another attempt then ran the same job"]}


def _plain(markup: str) -> str:
    console = Console(record=True, width=400, color_system=None)
    console.print(markup)
    return console.export_text().strip()


def test_a_cell_whose_only_failure_is_the_stores(tmp_path):
    store = cell_from_result("token-cas", "clock:store", Result.from_json(LOSS | {"failure_of": "store"}, tmp_path))
    own = cell_from_result("naive-del", "clock:store", Result.from_json(
        LOSS | {"failure_of": "lease", "foreign_releases": 3}, tmp_path))
    assert store.verdict == INVALID_STORE and own.verdict == INVALID
    assert what(store) == "the store broke the lease's promise: 2 early loss(es)"
    assert exit_code([store]) == 1 and exit_code([store, Cell("x", "none", VALID)]) == 1
    table = markdown_table([store, own])
    assert "**INVALID (store)**: the store broke the lease's promise" in table and "**INVALID**: 3 foreign" in table
    page = html_page([store, own], Header("leasecheck matrix", "now", "here", 1, 1), tmp_path)
    assert '<td class="STORE"><span class="v">INVALID (store)</span>' in page and ".STORE{" in page
    console = Console(record=True, width=200)
    console.print(rich_table([store, own]))
    assert "INVALID (store)" in console.export_text()


def test_a_valid_cell_names_the_hazards_it_never_reached(tmp_path):
    ok = cell_from_result("get-compare-del", "none", Result.from_json(
        {"valid": True, "reasons": [], "hazards": {"missed": ["release_at_expiry"]}}, tmp_path))
    assert what(ok) == "overlap 0, 0 release(s) found nothing; but no release was in flight at an expiry"


def test_the_verdict_line():
    missed = "no release was in flight at an expiry: a check-then-act release was not exercised"
    valid = {"valid": True, "reasons": ["no foreign release among 16 claim(s)", missed],
             "hazards": {"missed": ["release_at_expiry"]}}
    assert _plain(verdict_line(valid)) == f"VALID — but {missed}; no foreign release among 16 claim(s)"
    assert _plain(verdict_line({"valid": True, "reasons": ["fine"], "hazards": {"missed": []}})) == "VALID fine"
    store = {"valid": False, "failure_of": "store", "reasons": ["2 claim(s) lost early"]}
    assert _plain(verdict_line(store)) == f"INVALID (store) {STORE_WORDS}: 2 claim(s) lost early"
    assert "not about the lease" in STORE_WORDS
    assert _plain(verdict_line({"valid": False, "failure_of": "lease", "reasons": ["3 foreign"]})) == "INVALID 3 foreign"
    assert _plain(verdict_line({"valid": "unknown", "reasons": ["no claim [seen]"]})) == "INCONCLUSIVE no claim [seen]"


def test_the_hazards_row():
    row = hazard_words({"counts": {"holder_past_deadline": 3, "release_at_expiry": 0}, "missed": ["release_at_expiry"]})
    assert row == ("reached: holder past deadline 3; no release was in flight at an expiry: "
                   "a check-then-act release was not exercised")
    assert hazard_words({"counts": {"holder_past_deadline": 0}, "missed": []}) == "none reached"


def test_the_report_says_it_too():
    from leasecheck.harness.reports.html.page import _summary, _verdict
    store = LOSS | {"failure_of": "store", "early_loss": {"count": 2}, "hazards": {
        "counts": {"clock_jump_while_held": 1, "release_at_expiry": 0}, "missed": ["release_at_expiry"]}}
    assert _verdict(store) == "INVALID (store)" and _verdict(LOSS | {"failure_of": "lease"}) == "INVALID"
    rows = {name: (word, text) for name, word, text in _summary(store)}
    assert rows["early loss"][0] == "INVALID (store)" and "not the lease" in rows["early loss"][1]
    assert rows["hazards"] == ("not all reached", "reached: clock jump while held 1; no release was in flight at an "
                                                  "expiry: a check-then-act release was not exercised")
