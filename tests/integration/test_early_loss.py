"""Early loss: the store breaking the lease's promise (a claim gone before its deadline while
another attempt then ran the job) fails a run; a holder stalled past its deadline does not.
Both run the scenario files as shipped."""
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration
SCENARIOS = Path(__file__).resolve().parents[2] / "scenarios"


def test_token_cas_under_a_store_clock_jump_fails_by_early_loss(leasecheck):
    r = leasecheck("run", "--scenario", str(SCENARIOS / "store-clock-jump.toml"), "--lease", "token-cas")
    res = r.results
    assert r.code == 1, r.out + r.err
    assert res["foreign_releases"] == 0
    assert res["early_loss"]["count"] > 0 and res["early_loss"]["by_cause"]["clock_jump"] > 0
    assert all("lost before the lease's deadline" in x for x in res["reasons"]), res["reasons"]
    assert "Early loss on" in res["witness"]["markdown"]
    assert "clock:store jumps +4.000 s" in res["witness"]["markdown"]
    assert all(f["took_effect"] is True for f in res["faults"])


def test_token_cas_with_its_holder_paused_past_the_deadline_overlaps_without_early_loss(leasecheck):
    r = leasecheck("run", "--scenario", str(SCENARIOS / "holder-pause.toml"), "--lease", "token-cas")
    res = r.results
    assert r.code == 0, r.out + r.err
    assert res["overlap"]["count"] > 0 and res["early_loss"]["count"] == 0
    assert all(f["took_effect"] is True for f in res["faults"])
