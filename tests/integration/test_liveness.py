"""Liveness, run the way a user runs it: a claim written without an expiry outlives its killed
holder for good, a contender's "helpful" PEXPIRE keeps a dead holder's claim alive, and a hung
holder whose renewals go on holds the key past --max-hold. Each fails the liveness verdict while
safety holds, and says so in words, with a witness, in the summary, results.json, report.html
and JUnit."""
import xml.etree.ElementTree as ET

import pytest

pytestmark = pytest.mark.integration

LEASES = "tests/integration/liveness_leases.py"
KILL = ('[run]\nworkers = 3\nttl = "1s"\njob_duration = "0.3s"\ntime_limit = "4s"\n'
        '[[event]]\nat = "1s"\nfault = "kill"\ntarget = "holder"\nduration = "1s"\n')
HANG = ('[run]\nlease = "token-cas-renew"\nworkers = 3\nttl = "1s"\njob_duration = "0.3s"\ntime_limit = "4s"\n'
        '[[event]]\nat = "1s"\nfault = "hang"\ntarget = "holder"\nduration = "1.5s"\n')


def _scenario(tmp_path, text: str) -> str:
    path = tmp_path / "s.toml"
    path.write_text(text)
    return str(path)


def test_a_claim_without_expiry_is_stuck_after_its_holder_is_killed(leasecheck, tmp_path):
    junit = tmp_path / "j.xml"
    r = leasecheck("run", "--scenario", _scenario(tmp_path, KILL), "--lease", f"{LEASES}:NoExpiry",
                   "--junit", str(junit))
    assert r.code == 1, r.out + r.err
    res = r.results
    assert res["safety"]["valid"] is True and res["liveness"]["valid"] is False and res["valid"] is False
    (fault,) = res["faults"]
    assert fault["took_effect"] is True
    stuck = res["stuck_claims"]
    first = stuck["first"][0]
    assert stuck["count"] >= 1 and first["attempt"] in fault["measured"]["attempts"]
    assert first["no_expiry"] and first["still_held"] and first["stayed_s"] > stuck["bound_s"]
    assert res["no_expiry"]["count"] >= 1
    reason = res["reasons"][0]
    assert f"attempt {first['attempt']}'s claim" in reason and "outlived its holder by at least" in reason
    assert "it was written without an expiry" in reason and "its worker" in reason and "was killed" in reason
    assert "stuck claims" in r.out and "safety VALID · liveness INVALID" in r.out
    assert "## Stuck claim on" in (r.run_dir / "witness.md").read_text()
    html = (r.run_dir / "report.html").read_text()
    assert "Stuck claim" in html and "stuck claims (liveness)" in html
    cases = {c.get("name"): c for c in ET.parse(junit).getroot().iter("testcase")}
    assert cases["stuck_claims"].get("classname").endswith(".liveness")
    assert cases["stuck_claims"].find("failure") is not None and cases["foreign_releases"].find("failure") is None


def test_a_contender_refreshing_the_expiry_keeps_a_dead_holders_claim_alive(leasecheck, tmp_path):
    r = leasecheck("run", "--scenario", _scenario(tmp_path, KILL), "--lease", f"{LEASES}:RefreshesOnLoss")
    assert r.code == 1, r.out + r.err
    res = r.results
    assert res["safety"]["valid"] is True and res["liveness"]["valid"] is False
    kept = res["kept_alive"]
    first = kept["first"][0]
    assert kept["commands"] >= 1 and first["f"] == "acquire" and first["command"] == "PEXPIRE"
    assert first["after_holder_s"] is not None and "was killed" in first["holder_how"]
    assert any("kept alive by another attempt" in x and "other attempts' acquires kept" in x for x in res["reasons"])
    assert "kept alive" in r.out and "## Claim kept alive by another attempt" in (r.run_dir / "witness.md").read_text()


def test_a_hung_holder_renewing_past_max_hold_fails_liveness(leasecheck, tmp_path):
    r = leasecheck("run", "--scenario", _scenario(tmp_path, HANG), "--max-hold", "1s")
    assert r.code == 1, r.out + r.err
    res = r.results
    assert res["safety"]["valid"] is True and res["liveness"]["valid"] is False
    (fault,) = res["faults"]
    assert fault["took_effect"] is True
    holds = res["holds"]
    assert holds["over_max_hold"] >= 1 and holds["longest_s"] > 1.5 and holds["max_hold_s"] == 1.0
    assert holds["longest"]["attempt"].startswith(fault["measured"]["slot"] + ".")
    assert any("held longer than --max-hold 1 s" in x for x in res["reasons"])
    assert "over --max-hold 1 s" in r.out


def test_liveness_warn_reports_a_stuck_claim_without_failing_the_run(leasecheck, tmp_path):
    r = leasecheck("run", "--scenario", _scenario(tmp_path, KILL.replace("workers = 3", "workers = 2")),
                   "--lease", f"{LEASES}:NoExpiry", "--liveness", "warn")
    assert r.code == 0, r.out + r.err
    res = r.results
    assert res["valid"] is True and res["safety"]["valid"] is True
    assert res["liveness"] == {**res["liveness"], "valid": False, "mode": "warn"}
    assert res["warnings"] and "written without an expiry" in res["warnings"][0]
    assert "warning (liveness, --liveness warn):" in r.out and "liveness INVALID, warnings only" in r.out
