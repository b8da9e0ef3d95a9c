"""Whole runs from tests/checkers/data, in known-good / known-bad pairs, through check_run."""
import json
import shutil
from pathlib import Path

import pytest

from leasecheck.checkers import check, check_run, load_history

DATA = Path(__file__).parent / "data"
KEYS = {"schema_version", "interrupted", "lost_while_held", "diagnosis", "token_reuse", "expiry_edge", "walk_ins", "faults", "faults_not_fired", "stale_effects", "certainty", "valid", "reasons", "foreign_releases", "foreign_releases_first", "overlap", "releases_found_nothing",
        "releases_found_nothing_rate", "releases_found_nothing_outcomes", "releases_found_nothing_first", "releases_unknown", "claims", "ops", "duration_s", "audit",
        "disagreements", "problems", "witness", "claims_seen", "early_loss", "first_violation", "hung_calls",
        "exceptions", "safety", "liveness", "warnings", "stuck_claims", "no_expiry", "kept_alive", "recovery",
        "holds", "hazards", "failure_of"}


@pytest.mark.parametrize("name", sorted(p.name for p in DATA.iterdir()))
def test_every_fixture_gives_a_json_result_with_the_schema(name):
    result = check_run(DATA / name)
    assert set(result) == KEYS and result["schema_version"] == 1
    assert result["hung_calls"] == {"count": 0, "first": []}
    assert set(result["safety"]) == {"valid", "reasons"} and set(result["liveness"]) == {"valid", "reasons", "mode"}
    assert result["valid"] == result["safety"]["valid"] or result["liveness"]["valid"] is not True
    assert set(result["overlap"]) == {"count", "rate", "max_concurrency", "concurrency_time_s", "per_key", "causes"}
    assert sum(result["overlap"]["causes"].values()) == result["overlap"]["count"]
    assert set(result["audit"]) == {"present", "complete", "lines", "unattributed"}
    json.dumps(result)


def test_incident_timeline_with_plain_delete_is_a_foreign_release():
    r = check_run(DATA / "incident-plain-del-bad")
    assert r["valid"] is False and r["foreign_releases"] == 1
    assert r["overlap"]["max_concurrency"] == 3 and r["overlap"]["count"] == 2
    assert r["claims"] == {"released_by_holder": 1, "expired_while_held": 1, "expired_after_job": 0,
                           "foreign_release": 1, "evicted": 0, "lost_in_restart": 0, "lost_in_failover": 0,
                           "still_held": 0, "unknown": 0}
    assert r["releases_found_nothing"] == 1                      # B's release came too late
    assert "w0.s0.0's DEL" in r["reasons"][0] and "w1.s0.0" in r["reasons"][0]
    [listed] = r["foreign_releases_first"]                      # each one, for the report's lanes
    assert (listed["attempt"], listed["victim"], listed["command"]) == ("w0.s0.0", "w1.s0.0", "DEL")
    assert r["disagreements"] == [] and r["problems"] == []


def test_incident_timeline_with_token_cas_is_valid_but_overlaps():
    r = check_run(DATA / "incident-token-cas-ok")
    assert r["valid"] is True and r["foreign_releases"] == 0
    assert r["releases_found_nothing"] == 1 and r["releases_found_nothing_rate"] == 0.5
    assert r["overlap"]["count"] == 1 and r["overlap"]["max_concurrency"] == 2
    assert r["witness"] is None and r["disagreements"] == []
    assert any("found nothing" in reason for reason in r["reasons"])


def test_fixed_token_release_is_foreign_because_attribution_is_by_attempt():
    r = check_run(DATA / "fixed-token-bad")
    assert r["valid"] is False and r["foreign_releases"] == 1
    assert "attempt w0.s0.0's EVAL: del" in r["reasons"][0] and "attempt w0.s1.0" in r["reasons"][0]
    # ... and the reused token itself is reported, whether or not a release went wrong.
    assert r["token_reuse"]["tokens"] == 1 and set(r["token_reuse"]["example"]) == {"w0.s0.0", "w0.s1.0"}
    assert "not fresh per attempt" in r["reasons"][1]


def test_fresh_tokens_are_not_reuse():
    r = check_run(DATA / "incident-token-cas-ok")
    assert r["token_reuse"] == {"tokens": 0, "attempts": 0, "example": [], "line": None}


def test_late_command_after_reconnect_pair():
    bad, good = check_run(DATA / "stale-reconnect-bad"), check_run(DATA / "stale-reconnect-ok")
    assert bad["valid"] is False and "attempt w0.s0.0's DEL (audit.log line 8" in bad["reasons"][0]
    assert good["valid"] is True and good["foreign_releases"] == 0
    assert bad["releases_unknown"] == good["releases_unknown"] == 1


def test_client_retry_is_a_disagreement():
    r = check_run(DATA / "client-retry")
    assert r["disagreements"] == ["w0.s0.0 acquire reported fail, but its SET created a claim in the "
                                  "audit (a client retry?)"]
    assert r["claims"]["expired_after_job"] == 1 and r["valid"] is True


def test_killed_run_is_unknown_and_damage_is_reported():
    r = check_run(DATA / "killed-run")
    assert r["valid"] == "unknown" and r["audit"]["complete"] is False
    assert "history.d/w1.jsonl:4: torn last line (run was killed?)" in r["problems"]
    assert any(p.startswith("history.d/w0.jsonl:3: malformed line skipped") for p in r["problems"])
    assert "audit.log:7: torn last line (run was killed?)" in r["problems"]
    assert "could be hidden" in r["reasons"][0]
    assert not (DATA / "killed-run" / "history.jsonl").exists()


def test_missing_audit_is_unknown(tmp_path):
    shutil.copytree(DATA / "incident-token-cas-ok", tmp_path / "run")
    (tmp_path / "run" / "audit.log").unlink()
    r = check_run(tmp_path / "run")
    assert r["valid"] == "unknown" and "no audit.log" in r["reasons"][0]
    assert r["audit"]["present"] is False and r["overlap"]["count"] == 1


def test_missing_audit_does_not_hide_a_false_overlap_verdict(tmp_path):
    shutil.copytree(DATA / "incident-token-cas-ok", tmp_path / "run")
    (tmp_path / "run" / "audit.log").unlink()
    events, _ = load_history(tmp_path / "run")
    r = check(events, None, {"key_prefix": "lc:t1:", "max_overlap": 0.1})
    assert r["valid"] is False and "above max_overlap" in r["reasons"][0]


def test_overlap_within_limit_stays_valid():
    events, _ = load_history(DATA / "incident-token-cas-ok")
    from leasecheck.checkers import load_audit
    r = check(events, load_audit(DATA / "incident-token-cas-ok"), {"key_prefix": "lc:t1:", "max_overlap": 0.5})
    assert r["valid"] is True


def test_no_store_clock_falls_back_to_an_estimate(tmp_path):
    shutil.copytree(DATA / "incident-plain-del-bad", tmp_path / "run")
    (tmp_path / "run" / "store-clock.jsonl").unlink()
    r = check_run(tmp_path / "run")
    assert r["valid"] is False and r["claims"]["expired_while_held"] == 1
    assert any("estimated" in p for p in r["problems"])
    assert r["witness"]["rows"][0]["time_s"] == pytest.approx(0.011, abs=0.002)


def test_check_run_never_raises(tmp_path):
    r = check_run(tmp_path / "does-not-exist")
    assert r["valid"] == "unknown" and "HistoryError" in r["reasons"][0]
    (tmp_path / "x").mkdir()
    (tmp_path / "x" / "history.jsonl").write_text('{"time": 0, "type": "run_start"}\n')
    r = check_run(tmp_path / "x")                           # no config: no key prefix
    assert r["valid"] == "unknown" and "key_prefix" in r["reasons"][0]


def test_public_api():
    import leasecheck.checkers as checkers
    assert set(checkers.__all__) == {"AuditRecord", "CheckError", "HistoryError", "Witness", "check",
                                     "check_run", "load_audit", "load_history", "parse_audit", "write_merged"}
    assert issubclass(checkers.HistoryError, checkers.CheckError)


def test_third_worker_walks_in_only_after_a_foreign_release():
    assert check_run(DATA / "incident-plain-del-bad")["walk_ins"] == 1
    assert check_run(DATA / "incident-token-cas-ok")["walk_ins"] == 0


def test_overlap_causes_show_what_the_token_fixes():
    bad, good = check_run(DATA / "incident-plain-del-bad"), check_run(DATA / "incident-token-cas-ok")
    assert bad["overlap"]["causes"]["foreign_release"] >= 1      # the third worker walked in
    assert bad["overlap"]["causes"]["deadline_passed"] >= 1      # B joined A after A's deadline
    assert good["overlap"]["causes"]["foreign_release"] == 0
    assert good["overlap"]["causes"]["deadline_passed"] == good["overlap"]["count"] >= 1


def test_a_history_newer_than_the_checker_is_refused_with_a_message(tmp_path):
    import shutil

    run = tmp_path / "run"
    shutil.copytree(DATA / "incident-token-cas-ok", run)
    lines = (run / "history.jsonl").read_text().splitlines()
    first = json.loads(lines[0])
    assert first["type"] == "run_start"
    first["schema_version"] = 99
    (run / "history.jsonl").write_text("\n".join([json.dumps(first)] + lines[1:]) + "\n")
    r = check_run(run)
    assert r["valid"] == "unknown" and "newer than this checker" in " ".join(r["reasons"])


def test_reused_token_witness_names_both_attempts():
    r = check_run(DATA / "fixed-token-bad")
    md = r["witness"]["markdown"]
    assert "## Reused holder token" in md and "w0.s0.0" in md and "w0.s1.0" in md


def test_strict_check_run_raises_for_a_missing_history(tmp_path):
    from leasecheck.checkers.errors import HistoryError

    with pytest.raises(HistoryError, match="no history to check"):
        check_run(tmp_path, strict=True)
