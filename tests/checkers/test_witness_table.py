"""The witness: the incident's timeline table for the first foreign release."""
from pathlib import Path

from leasecheck.checkers import check_run

DATA = Path(__file__).parent / "data"


def test_incident_timeline_witness_has_a_b_and_c():
    w = check_run(DATA / "incident-plain-del-bad")["witness"]
    assert w["key"] == "lc:t1:job:0"
    assert w["columns"] == ["Time (s)", "Worker A (w0.s0.0)", "Worker B (w1.s0.0)", "Worker C (w2.s0.0)",
                            "The key in the store"]
    assert [row["time_s"] for row in w["rows"]] == [0.011, 1.011, 1.051, 1.502, 1.601]
    a, expiry, b, removal, c = (row["cells"] for row in w["rows"])
    assert a[0].startswith("wins the conditional create") and a[3] == "A's claim, deadline 1.011"
    assert expiry[3] == "absent: A's deadline passed"
    assert b[1].startswith("wins its own conditional create") and b[3] == "B's claim, deadline 2.051"
    assert removal == ["DEL deletes B's claim", "still working", "—", "absent: A deleted B's claim"]
    assert c[1] == "still working" and "third worker walks in" in c[2] and c[3] == "C's claim, deadline 2.601"


def test_markdown_table():
    md = check_run(DATA / "incident-plain-del-bad")["witness"]["markdown"]
    lines = md.splitlines()
    assert lines[0] == "## Foreign release on `lc:t1:job:0`"
    table = [l for l in lines if l.startswith("|")]
    assert table[0] == ("| Time (s) | Worker A (w0.s0.0) | Worker B (w1.s0.0) | Worker C (w2.s0.0) "
                        "| The key in the store |")
    assert table[1] == "|---|---|---|---|---|" and len(table) == 7
    assert table[5].startswith("| 1.502 | DEL deletes B's claim |")


def test_witness_without_a_third_worker():
    w = check_run(DATA / "fixed-token-bad")["witness"]
    assert len(w["columns"]) == 4 and len(w["rows"]) == 4
    assert w["rows"][-1]["cells"][0] == "EVAL: del deletes B's claim"
