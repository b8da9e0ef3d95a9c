"""The summary names what happened: the faults that acted (requested vs measured) and, for a holder
paused past its deadline, that cause — not "the lease is too short"."""
import re

import pytest

pytestmark = pytest.mark.integration


def test_a_paused_holder_is_named_as_the_cause_and_the_fault_is_listed(leasecheck, tmp_path):
    # Jobs of 0.3 s under a 1 s lease never outlive it on their own; the holder is stopped for
    # 1.5 s, so its claim runs out while it is paused.
    scenario = tmp_path / "pause.toml"
    scenario.write_text('[run]\nlease = "token-cas"\nworkers = 3\nttl = "1s"\njob_duration = "0.3s"\n'
                        'time_limit = "5s"\n[[event]]\nat = "1.5s"\nfault = "pause"\ntarget = "holder"\n'
                        'duration = "1.5s"\n')
    r = leasecheck("run", "--scenario", str(scenario))
    assert r.code == 0, r.out + r.err
    res = r.results
    assert res["lost_while_held"]["holder_paused"] >= 1 and res["lost_while_held"]["deadline_passed"] == 0
    assert any("the holder was paused past its deadline" in s for s in res["diagnosis"])
    out = " ".join(r.out.split())
    assert "paused past its deadline" in out and "too short" not in out
    assert re.search(r"pause:holder \d+\.\d{3}–\d+\.\d{3} s: requested duration 1\.5 s; measured paused "
                     r"1\.[45]\d* s;[^—]*processes w\d[^—]*— took effect", out), out
