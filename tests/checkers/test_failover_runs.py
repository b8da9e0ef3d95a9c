"""Two real replicated runs, saved (tests/checkers/replicated): the failover scenario, whose cut
lost an acknowledged claim, and the same scenario without the cut. Checked from their files alone."""
from pathlib import Path

from checkers import check_run

RUNS = Path(__file__).parent / "replicated"


def test_a_claim_acknowledged_during_the_cut_is_lost_in_failover_and_fails_the_run():
    r = check_run(RUNS / "failover-lost-bad")
    assert r["valid"] is False and r["reasons"][0].startswith("1 claim(s) lost in failover")
    f = r["failover"]
    assert f["failovers"] == [{"fault": 0, "primary_before": "node1", "promoted": "node2",
                               "stopped_s": f["failovers"][0]["stopped_s"], "promoted_s": f["failovers"][0]["promoted_s"]}]
    assert f["failovers"][0]["stopped_s"] < f["failovers"][0]["promoted_s"]
    (lost,) = f["examples"]
    assert (lost["node"], lost["promoted"], lost["fate"], lost["cause"]) == ("node1", "node2", "lost_in_failover", "failover")
    assert lost["created_s"] < f["failovers"][0]["stopped_s"] < lost["newcomer_won_s"] < lost["deadline_s"]
    assert r["witness"]["kind"] == "failover"        # the first violation's witness
    assert "| time (s) | what | node1 | node2 |" in r["witness"]["markdown"]
    assert "mutual_exclusion" not in r          # a replicated run is judged by `failover`


def test_the_same_failover_without_the_cut_loses_nothing():
    r = check_run(RUNS / "failover-nolag-ok")
    assert r["valid"] is True and r["failover"]["lost_in_failover"] == 0
    assert r["failover"]["failovers"][0]["promoted"] == "node2" and r["failover"]["claims_per_node"]["node2"] >= 1
    assert r["audit"]["complete"] is True
