"""The first violation's kind and time: the earliest of the proven violations, on the history's
clock; none in a valid run."""
import re
from pathlib import Path

from leasecheck.checkers import check_run

DATA = Path(__file__).parent / "data"


def test_a_foreign_release_is_timed_where_the_reasons_place_it():
    r = check_run(DATA / "incident-plain-del-bad")
    first = r["first_violation"]
    assert first["kind"] == "foreign_release"
    assert f"{first['time_s']:.3f} s)" in r["reasons"][0]


def test_a_reused_token_counts_from_the_second_claim_that_carries_it():
    # Here the reuse comes before the foreign release it makes possible.
    r = check_run(DATA / "fixed-token-bad")
    first = r["first_violation"]
    assert r["token_reuse"]["tokens"] >= 1 and r["foreign_releases"] >= 1
    assert first["kind"] == "token_reuse"
    foreign_at = float(re.search(r"audit.log line \d+, ([\d.]+) s\)", r["reasons"][0]).group(1))
    assert first["time_s"] < foreign_at


def test_a_valid_run_has_none():
    r = check_run(DATA / "incident-token-cas-ok")
    assert r["valid"] is True and r["first_violation"] is None


def test_a_claim_lost_early_counts_from_the_newcomers_start():
    r = check_run(DATA / "evicted-info-create-ok")         # lost to an eviction while its holder worked
    assert r["valid"] is False and r["early_loss"]["count"] == 1 and r["foreign_releases"] == 0
    assert r["first_violation"] == {"kind": "early_loss", "time_s": r["early_loss"]["first"][0]["newcomer_start_s"]}


def test_a_claim_lost_in_failover_is_the_first_violation_when_the_newcomer_won():
    r = check_run(Path(__file__).parent / "replicated" / "failover-lost-bad")
    assert r["first_violation"] == {"kind": "early_loss", "time_s": r["failover"]["examples"][0]["newcomer_won_s"]}
