"""The terminal summary prints a hash-field claim's name, `key[field]`, as it is (not as markup)."""
import io
from pathlib import Path

from rich.console import Console

from leasecheck.checkers import check_run
from leasecheck.harness.reports.summary import print_summary

DATA = Path(__file__).parents[1] / "checkers" / "data"


def test_a_hash_field_is_named_in_the_summary():
    out = io.StringIO()
    print_summary(Console(file=out, width=300), check_run(DATA / "hash-field-hdel-bad"), DATA / "hash-field-hdel-bad")
    text = out.getvalue()
    assert "e.g. lc:t1:leases[lc:t1:job:0], lc:t1:leases[lc:t1:job:1]" in text
    assert "which deleted the claim of attempt w1.s0.0 on lc:t1:leases[lc:t1:job:0]" in text
