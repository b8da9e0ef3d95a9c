"""The foundation's acceptance runs, end to end: real worker processes, a real store."""
import pytest

pytestmark = pytest.mark.integration


def test_naive_del_frees_another_workers_claim(leasecheck):
    r = leasecheck("run", "--lease", "naive-del", "--time-limit", "20")
    assert r.code == 1, r.out + r.err
    res = r.results
    assert res["valid"] is False
    assert res["foreign_releases"] >= 1
    assert "foreign release" in r.out.lower()
    witness = (r.run_dir / "witness.md").read_text()
    assert "the key in the store" in witness
    assert res["witness"]["kind"] == "foreign_release"


def test_fixed_token_with_two_slots_frees_a_sibling_claim(leasecheck):
    r = leasecheck("run", "--lease", "fixed-token", "--slots", "2", "--time-limit", "20")
    assert r.code == 1, r.out + r.err
    assert r.results["foreign_releases"] >= 1
    assert (r.run_dir / "witness.md").exists()


def test_token_cas_is_safe_but_still_overlaps(leasecheck):
    r = leasecheck("run", "--lease", "token-cas", "--time-limit", "20")
    assert r.code == 0, r.out + r.err
    res = r.results
    assert res["valid"] is True
    assert res["foreign_releases"] == 0
    assert res["overlap"]["count"] > 0          # the token does not prevent overlap
    assert res["releases_found_nothing"] > 0    # ... and says so: the lease is too short
    assert res["audit"]["complete"] is True
    for name in ("history.jsonl", "audit.log", "config.json", "store.log", "results.json"):
        assert (r.run_dir / name).exists(), name
