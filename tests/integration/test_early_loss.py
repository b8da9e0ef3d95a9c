"""Early loss: the store breaking the lease's promise (a claim gone before its deadline while
another attempt then ran the job) fails a run; a holder stalled past its deadline does not."""
import pytest

pytestmark = pytest.mark.integration

CLOCK_JUMP = """
name = "short-store-clock-jump"
[run]
lease = "token-cas"
ttl = "2s"
job_duration = "1s"
time_limit = "7s"
[[event]]
at = "3s"
fault = "clock"
target = "store"
offset = "+4s"
duration = "2s"
"""

HOLDER_PAUSE = """
name = "short-holder-pause"
[run]
lease = "token-cas"
ttl = "2s"
job_duration = "0.5s"
time_limit = "7s"
[[event]]
at = "2s"
fault = "pause"
target = "holder"
duration = "3s"
"""


def _scenario(tmp_path, text):
    path = tmp_path / "scenario.toml"
    path.write_text(text)
    return str(path)


def test_a_store_clock_jump_is_an_early_loss_and_fails_the_run(leasecheck, tmp_path):
    r = leasecheck("run", "--scenario", _scenario(tmp_path, CLOCK_JUMP))
    res = r.results
    assert r.code == 1, r.out + r.err
    assert res["foreign_releases"] == 0
    assert res["early_loss"]["count"] > 0 and res["early_loss"]["by_cause"]["clock_jump"] > 0
    assert any("lost before the lease's deadline" in x for x in res["reasons"])
    assert "Early loss on" in res["witness"]["markdown"] and "clock:store jumps +4.000 s" in res["witness"]["markdown"]


def test_a_holder_paused_past_its_deadline_overlaps_without_early_loss(leasecheck, tmp_path):
    r = leasecheck("run", "--scenario", _scenario(tmp_path, HOLDER_PAUSE))
    res = r.results
    assert r.code == 0, r.out + r.err
    assert res["overlap"]["count"] > 0 and res["early_loss"]["count"] == 0
