"""A check-then-act release (get-compare-del) is found by aiming the pause at the releaser while
the reply of its read is in transit (scenarios/check-then-act.toml), seed after seed; and the
pauses measurably land inside the release."""
import pytest

pytestmark = pytest.mark.integration

SCENARIO = "scenarios/check-then-act.toml"


@pytest.mark.parametrize("seed", [11, 12])
def test_get_compare_del_is_found_with_pauses_aimed_at_the_releaser(leasecheck, seed):
    # 6 s: the pauses at 1 s and 3 s fire whole (the later ones are cut or never fire)
    r = leasecheck("run", "--scenario", SCENARIO, "--seed", str(seed), "--time-limit", "6s")
    assert r.code == 1, r.out + r.err
    res = r.results
    assert res["foreign_releases"] >= 1
    assert res["witness"]["kind"] == "foreign_release"
    assert (r.run_dir / "witness.md").is_file()
    pauses = [f for f in res["faults"] if f["fault"] == "pause" and f["measured"]]
    assert pauses and all(f["target"] == "releaser" for f in pauses)
    landed = [f["measured"]["in_call"] for f in pauses]
    assert sum(landed) >= len(landed) - 1, landed          # the pause lands inside the release
    assert all(f["measured"]["slot"].startswith(tuple(f["measured"]["processes"])) for f in pauses)


def test_the_same_faults_leave_an_atomic_release_valid(leasecheck):
    # the repair under the same aimed faults: no foreign release (a check that can fail)
    r = leasecheck("run", "--scenario", SCENARIO, "--seed", "11", "--time-limit", "6s", "--lease", "token-cas")
    assert r.code in (0, 2), r.out + r.err      # 2: the steps cut by --time-limit 6s make it inconclusive
    assert r.results["foreign_releases"] == 0
    assert any(f["measured"] and f["measured"].get("in_call") for f in r.results["faults"])
