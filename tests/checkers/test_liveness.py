"""The liveness properties on small hand-written runs (a history, an audit, a config): stuck
claims and claims with no expiry, claims kept alive by another attempt, recovery time, the
longest hold and --max-hold, and the two verdicts side by side (--liveness warn)."""
import json
import subprocess
import sys
from pathlib import Path

from leasecheck.checkers import check_run
from leasecheck.checkers.measures.attempt_ends import AttemptEnds, kills
from leasecheck.checkers.read.ops import Op
from leasecheck.checkers.result import LIVENESS, Part, Result
from leasecheck.harness.faults.kill_holder import died

T0 = 1795951565.0      # the store's clock at history time 0
KEY = "lc:t1:job:0"


def _ms(t_ms: float) -> int:
    return int(t_ms * 1_000_000)


def _write(tmp_path: Path, px: bool, pexpire_by_contender: bool = False, **config) -> Path:
    """A run of 3 s: w0.s0.0 claims KEY at 11 ms (SET NX, with PX 1000 when `px`) and its worker is
    killed at 501 ms (kill:holder); w1.s0.0 tries at 900 ms and fails (and, with
    `pexpire_by_contender`, PEXPIREs the key it did not win)."""
    run = tmp_path / "run"
    run.mkdir()
    cfg = {"key_prefix": "lc:t1:", "ttl_ms": 1000, "lease": "x", "max_overlap": None, "workers": 2, "slots": 1,
           "jobs": 1, "seed": 7, "time_limit_s": 3} | config
    (run / "config.json").write_text(json.dumps(cfg))
    (run / "store-clock.jsonl").write_text("".join(
        json.dumps({"time": _ms(1000 * s), "rtt_ns": 100000, "store_us": int((T0 + s) * 1e6)}) + "\n" for s in range(4)))
    contender = [["w1.s0.c0", 0, "SET"]] + ([["w1.s0.c0", 1, "PEXPIRE"]] if pexpire_by_contender else [])
    measured = {"processes": ["w0"], "pid": 4242, "exit_code": -9, "gone": True, "held": True, "slots": ["w0.s0"],
                "attempts": ["w0.s0.0"], "killed_after_s": 0.001, "replacement": "w2", "replacement_pid": 4243}
    events = [
        (0, "harness", "run_start", {"config": cfg}),
        (_ms(1), "w0", "worker_start", {"pid": 4242}), (_ms(1), "w1", "worker_start", {"pid": 4244}),
        (_ms(10), "w0.s0", "invoke", {"f": "acquire", "attempt": "w0.s0.0", "key": KEY}),
        (_ms(12), "w0.s0", "ok", {"f": "acquire", "attempt": "w0.s0.0", "key": KEY, "value": True,
                                  "sent": [["w0.s0.c0", 0, "SET"]]}),
        (_ms(13), "w0.s0", "job_start", {"attempt": "w0.s0.0", "key": KEY}),
        (_ms(500), "nemesis", "fault_start", {"fault": "kill", "target": "holder", "n": 0,
                                               "requested": {"duration_s": 1.0, "size": None}}),
        (_ms(502), "nemesis", "worker_killed", {"worker": "w0", "pid": 4242, "attempts": ["w0.s0.0"]}),
        (_ms(900), "w1.s0", "invoke", {"f": "acquire", "attempt": "w1.s0.0", "key": KEY}),
        (_ms(903), "w1.s0", "fail", {"f": "acquire", "attempt": "w1.s0.0", "key": KEY, "value": False,
                                     "sent": contender}),
        (_ms(1500), "nemesis", "fault_end", {"fault": "kill", "target": "holder", "n": 0, "measured": measured}),
        (_ms(3000), "w1", "worker_end", {"pid": 4244}),
        (_ms(3001), "harness", "run_end", {"reason": "time-limit", "stopped_at": _ms(3000)}),
    ]
    (run / "history.jsonl").write_text("".join(
        json.dumps({"time": t, "process": p, "type": k, **f, "index": i}) + "\n" for i, (t, p, k, f) in enumerate(events)))
    expiry = ' "PX" "1000"' if px else ""
    lines = ["OK",
             f'{T0 + 0.005:.6f} [0 127.0.0.1:50000] "ECHO" "leasecheck:conn:w0.s0.c0"',
             f'{T0 + 0.005:.6f} [0 127.0.0.1:50100] "ECHO" "leasecheck:conn:w1.s0.c0"',
             f'{T0 + 0.011:.6f} [0 127.0.0.1:50000] "SET" "{KEY}" "tokA" "NX"{expiry}',
             f'{T0 + 0.901:.6f} [0 127.0.0.1:50100] "SET" "{KEY}" "tokB" "NX" "PX" "1000"']
    if pexpire_by_contender:
        lines.append(f'{T0 + 0.902:.6f} [0 127.0.0.1:50100] "PEXPIRE" "{KEY}" "1000"')
    lines += [f'{T0 + 3.002:.6f} [0 127.0.0.1:40000] "ECHO" "leasecheck:audit-end"', "# end"]
    (run / "audit.log").write_text("\n".join(lines) + "\n")
    return run


def test_a_claim_without_expiry_whose_holder_was_killed_is_stuck(tmp_path):
    r = check_run(_write(tmp_path, px=False))
    assert r["safety"]["valid"] is True, r["safety"]
    assert r["liveness"]["valid"] is False and r["valid"] is False
    stuck = r["stuck_claims"]
    assert stuck["count"] == 1 and stuck["bound_s"] == 1.25
    (s,) = stuck["first"]
    assert (s["attempt"], s["key"], s["still_held"], s["no_expiry"]) == ("w0.s0.0", KEY, True, True)
    assert s["holder_ended_s"] == 0.501 and s["how"] == "its worker w0 was killed"
    assert 2.45 <= s["stayed_s"] <= 2.55
    assert r["no_expiry"]["count"] == 1 and r["no_expiry"]["first"][0]["attempt"] == "w0.s0.0"
    reason = r["liveness"]["reasons"][0]
    assert "outlived its holder by at least 2." in reason and "it was written without an expiry" in reason
    assert reason in r["reasons"]
    assert "## Stuck claim on" in r["witness"]["markdown"] and "SIGKILL w0" in r["witness"]["markdown"]
    assert any(x.startswith("the claim outlived its holder by 2.") and x.endswith(
        "s or more: it was written without an expiry (attempt w0.s0.0, its worker w0 was killed)")
        for x in r["diagnosis"]), r["diagnosis"]
    assert r["recovery"]["count"] == 1 and r["recovery"]["events"][0]["recovered"] is False
    assert r["recovery"]["within_bound"] is False


def test_a_claim_with_an_expiry_frees_the_key_within_the_ttl_after_its_holder_died(tmp_path):
    r = check_run(_write(tmp_path, px=True))
    assert r["valid"] is True and r["safety"]["valid"] is True and r["liveness"]["valid"] is True, r["reasons"]
    assert r["stuck_claims"]["count"] == 0 and r["no_expiry"]["count"] == 0 and r["kept_alive"]["commands"] == 0
    rec = r["recovery"]
    assert rec["count"] == 1 and rec["events"][0]["recovered"] is True and rec["within_bound"] is True
    assert abs(rec["max_s"] - 0.51) < 0.01 and rec["median_s"] == rec["max_s"] and rec["ttl_s"] == 1.0
    # the dead holder's job ended with it: its claim expired after the job, no overlap, and the
    # lease is not taken for too short (a killed holder never releases)
    assert r["claims"]["expired_after_job"] == 1 and r["overlap"]["count"] == 0
    assert r["lost_while_held"]["deadline_passed"] == 0 and not any("too short" in x for x in r["diagnosis"])
    holds = r["holds"]
    assert holds["count"] == 1 and abs(holds["longest_s"] - 1.0) < 0.01 and holds["over_max_hold"] == 0


def test_a_contender_that_refreshes_the_key_keeps_a_dead_holders_claim_alive(tmp_path):
    r = check_run(_write(tmp_path, px=True, pexpire_by_contender=True))
    assert r["safety"]["valid"] is True and r["liveness"]["valid"] is False
    kept = r["kept_alive"]
    assert (kept["commands"], kept["claims"]) == (1, 1)
    (k,) = kept["first"]
    assert (k["attempt"], k["by"], k["f"], k["command"]) == ("w0.s0.0", "w1.s0.0", "acquire", "PEXPIRE")
    assert abs(k["kept_s"] - 0.891) < 0.01            # the expiry moved from 1.011 s to 1.902 s
    assert abs(k["after_holder_s"] - 1.401) < 0.01    # in the store until 1.902 s, its holder dead at 0.501 s
    assert any("kept alive by another attempt" in x and "after its holder's attempt ended (its worker w0 was killed)"
               in x for x in r["liveness"]["reasons"])
    assert r["stuck_claims"]["count"] == 1 and r["stuck_claims"]["first"][0]["kept_alive"] is True
    assert "## Claim kept alive by another attempt" in r["witness"]["markdown"]
    assert "other attempts' acquires kept the claim alive for 1.401 s after its holder's attempt ended " \
           "(its worker w0 was killed; attempt w0.s0.0)" in r["diagnosis"], r["diagnosis"]


def test_max_hold_fails_a_claim_held_longer(tmp_path):
    r = check_run(_write(tmp_path, px=True, max_hold_s=0.5))
    assert r["safety"]["valid"] is True and r["liveness"]["valid"] is False
    assert r["holds"]["over_max_hold"] == 1 and r["holds"]["max_hold_s"] == 0.5
    assert any("held longer than --max-hold 0.5 s" in x for x in r["reasons"])


def test_liveness_warn_leaves_the_verdict_to_safety(tmp_path):
    r = check_run(_write(tmp_path, px=False, liveness="warn"))
    assert r["valid"] is True and r["safety"]["valid"] is True
    assert r["liveness"]["valid"] is False and r["liveness"]["mode"] == "warn"
    assert r["warnings"] and "written without an expiry" in r["warnings"][0]
    assert not any("stuck claim" in x for x in r["reasons"])


def test_merging_keeps_the_two_verdicts_apart():
    safe = Part(notes=["fine"])
    hung = Part(failures=["hung"], kind=LIVENESS)
    r = Result.merged(1, [safe, hung])
    assert (r.valid, r.safety["valid"], r.liveness["valid"]) == (False, True, False) and r.reasons == ["hung"]
    r = Result.merged(1, [safe, hung], liveness="warn")
    assert (r.valid, r.reasons, r.warnings) == (True, ["fine"], ["hung"])
    r = Result.merged(1, [Part(doubts=["cannot tell"])])     # nothing of liveness was checked
    assert r.liveness["valid"] == "unknown" and r.valid == "unknown"


def test_the_public_result_has_both_verdicts(tmp_path):
    import leasecheck
    r = leasecheck.Result.from_json(check_run(_write(tmp_path, px=False)))
    assert (r.valid, r.safety, r.liveness) == (False, True, False)
    assert (r.verdict, r.safety_verdict, r.liveness_verdict, r.exit_code) == ("INVALID", "VALID", "INVALID", 1)
    warned = leasecheck.Result.from_json({"valid": True, "safety": {"valid": True}, "liveness": {"valid": False},
                                          "warnings": ["a stuck claim"]})
    assert warned.exit_code == 0 and warned.warnings == ("a stuck claim",) and warned.liveness is False
    assert leasecheck.Result.from_json({"valid": True}).liveness == "unknown"     # a results.json from before


def test_an_attempt_ends_at_its_last_call():
    ends = AttemptEnds()
    ends.feed(Op(0, "w0.s0.0", "acquire", KEY, 1, type="ok", value=True, end_time=2))
    ends.feed(Op(1, "w0.s0.0", "renew", KEY, 3, type="ok", value=True, end_time=4))
    assert ends.end_of("w0.s0.0") is None                    # won and renewing: still going
    ends.feed(Op(2, "w0.s0.0", "release", KEY, 5, type="info", end_time=6))
    assert ends.end_of("w0.s0.0") == (6, "its release raised")
    ends.feed(Op(3, "w0.s0.1", "acquire", KEY, 7, type="fail", value=False, end_time=8))
    assert ends.end_of("w0.s0.1") is None                    # lost: never held anything
    ends.feed(Op(4, "w0.s0.2", "acquire", KEY, 9, type="info", end_time=10))
    assert ends.end_of("w0.s0.2") == (10, "its acquire raised")
    assert kills([{"fault": "kill", "target": "holder", "start_s": 1.5,
                   "measured": {"attempts": ["w3.s0.7"], "killed_after_s": 0.25, "processes": ["w3"]}}]) == \
        {"w3.s0.7": (1_750_000_000, "its worker w3 was killed")}


def test_the_attempts_that_died_with_a_killed_worker(tmp_path):
    part = tmp_path / "w3.jsonl"
    lines = [{"type": "invoke", "f": "acquire", "attempt": "w3.s0.1"},
             {"type": "fail", "f": "acquire", "attempt": "w3.s0.1", "value": False},
             {"type": "invoke", "f": "acquire", "attempt": "w3.s0.2"},
             {"type": "ok", "f": "acquire", "attempt": "w3.s0.2", "value": True},
             {"type": "job_start", "attempt": "w3.s0.2"},
             {"type": "invoke", "f": "acquire", "attempt": "w3.s1.5"}]
    part.write_bytes(b"\n".join(json.dumps(x).encode() for x in lines) + b'\n{"type": "inv')   # a torn last line
    assert died(part) == ["w3.s0.2", "w3.s1.5"]


def test_check_may_turn_a_stored_runs_liveness_findings_into_warnings(tmp_path):
    from click.testing import CliRunner

    import leasecheck
    from leasecheck.harness.cli import cli
    from leasecheck.harness.errors import UsageError
    run = _write(tmp_path, px=False)                       # run with the default, --liveness fail
    r = CliRunner().invoke(cli, ["check", str(run), "--liveness", "warn"])
    assert r.exit_code == 0, r.output
    saved = json.loads((run / "results.json").read_text())
    assert saved["valid"] is True and saved["liveness"]["mode"] == "warn"
    assert "written without an expiry" in saved["warnings"][0]
    assert CliRunner().invoke(cli, ["check", str(run)]).exit_code == 1      # the run's own setting again
    assert leasecheck.check(run, liveness="warn").exit_code == 0
    assert leasecheck.check(run).exit_code == 1
    try:
        leasecheck.check(run, liveness="ignore")
    except UsageError as e:
        assert "liveness='ignore': give one of 'fail', 'warn'" in str(e)
    else:
        raise AssertionError("an unknown liveness mode was accepted")
    bad = subprocess.run([sys.executable, "-m", "leasecheck", "check", str(run), "--liveness", "ignore"],
                         capture_output=True, text=True)
    assert bad.returncode == 64 and "'ignore' is not one of 'fail', 'warn'" in bad.stderr, bad.stderr


def test_a_holder_s_end_is_its_kill_else_its_last_call_and_an_unknown_owner_has_none():
    from types import SimpleNamespace

    from leasecheck.checkers.measures.liveness import HolderEnds

    ends = AttemptEnds()
    ends.ended.update({"w0.s0.1": 5_000, "w1.s0.1": 7_000})
    ends.how.update({"w0.s0.1": "released", "w1.s0.1": "released"})
    kill = {"fault": "kill", "target": "holder", "start_s": 0.000003, "measured": {
        "attempts": ["w1.s0.1"], "processes": ["w1"], "killed_after_s": 0.0}}
    m = SimpleNamespace(digest=SimpleNamespace(attempt_ends=ends), faults=lambda: [kill])
    h = HolderEnds(m)
    assert h.get("w0.s0.1") == (5_000, "released") and h.time("w0.s0.1") == 5_000
    assert h.get("w1.s0.1") == (3_000, "its worker w1 was killed") and h.time("w1.s0.1") == 3_000
    assert h.get("w2.s0.1") is None and h.time("w2.s0.1") is None
    assert h.get(None) is None and h.time(None) is None     # a claim of no known attempt
