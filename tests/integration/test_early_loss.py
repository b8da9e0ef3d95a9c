"""Early loss: the store breaking the lease's promise (a claim gone before its deadline while
another attempt then ran the job) fails a run; a holder stalled past its deadline does not.
Both run the scenario files as shipped; the store clock jump's early loss is tested with the
other store-clock checks in test_faults.py."""
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration
SCENARIOS = Path(__file__).resolve().parents[2] / "scenarios"


def test_token_cas_with_its_holder_paused_past_the_deadline_overlaps_without_early_loss(leasecheck):
    r = leasecheck("run", "--scenario", str(SCENARIOS / "holder-pause.toml"), "--lease", "token-cas")
    res = r.results
    assert r.code == 0, r.out + r.err
    assert res["overlap"]["count"] > 0 and res["early_loss"]["count"] == 0
    assert all(f["took_effect"] is True for f in res["faults"])
