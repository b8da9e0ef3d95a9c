"""Whose finding a failed run is (results.json failure_of): "store" when the only failure is the
store breaking every lease's promise (early loss by eviction, a clock jump, a restart, a failover),
"lease" for any of the lease's own violations, null when nothing failed — on saved runs."""
from pathlib import Path

import pytest

from leasecheck.checkers.verdict import STORE_CAUSES, check_run, failure_of

HERE = Path(__file__).parent


@pytest.mark.parametrize("run, expected", [
    ("data/evicted-info-create-ok", "store"),        # a sound lease whose claim the store evicted
    ("replicated/failover-lost-bad", "store"),       # a claim the promoted replica never had
    ("data/evicted-info-create-bad", "lease"),       # the same eviction, and the lease's own foreign release
    ("data/incident-plain-del-bad", "lease"),
    ("data/fixed-token-bad", "lease"),
    ("data/incident-token-cas-ok", None),
    ("data/killed-run", None),                       # inconclusive: nothing failed
])
def test_saved_runs(run, expected):
    result = check_run(HERE / run)
    assert result["failure_of"] == expected, result["reasons"]
    assert (result["valid"] is False) == (expected is not None)


def test_the_rule():
    lost = {"early_loss": {"by_cause": {"clock_jump": 1, "short_expiry": 0}}}
    assert failure_of(["early_loss"], lost) == "store"
    assert failure_of(["early_loss", "foreign_releases"], lost) == "lease"
    # a lease that wrote a shorter expiry than its TTL lost the claim by its own doing
    assert failure_of(["early_loss"], {"early_loss": {"by_cause": {"short_expiry": 1}}}) == "lease"
    assert failure_of(["early_loss"], {"early_loss": {"by_cause": {"clock_jump": 1, "short_expiry": 1}}}) == "lease"
    # a renewal that reported success for a claim already gone: the lease's promise, not the store's
    assert failure_of(["early_loss"], {"early_loss": {"by_cause": {"clock_jump": 1, "renewal_missed": 1}}}) == "lease"
    assert failure_of([], lost) is None
    assert STORE_CAUSES == {"clock_jump", "eviction", "store_restart", "failover"}
