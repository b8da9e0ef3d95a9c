"""A run cut short is never VALID: decided from the history (run_end, worker ends) alone."""
import json
import shutil
from pathlib import Path

from leasecheck.checkers import check_run
from leasecheck.checkers.measures.interruption import RunSpan

DATA = Path(__file__).parent / "data"
PLAN = {"time_limit_s": 30}


def span(*events) -> RunSpan:
    s = RunSpan()
    s.feed({"time": 0, "process": "harness", "type": "run_start", "config": PLAN})
    for t_s, process, kind, extra in events:
        s.feed({"time": int(t_s * 1e9), "process": process, "type": kind, **extra})
    return s


def test_a_run_that_ran_its_time_is_not_interrupted():
    s = span((0.01, "w0", "worker_start", {"pid": 11}), (30.4, "w0", "worker_end", {"pid": 11}),
             (30.5, "harness", "run_end", {"reason": "time-limit", "stopped_at": int(30.01e9)}))
    assert s.interrupted(PLAN, int(30.5e9)) is None


def test_sigint_gives_planned_and_actual_duration():
    s = span((0.01, "w0", "worker_start", {"pid": 11}), (3.9, "w0", "worker_end", {"pid": 11}),
             (4.0, "harness", "run_end", {"reason": "interrupted", "signal": "SIGINT",
                                          "stopped_at": int(3.5e9)}))
    cut = s.interrupted(PLAN, int(4e9))
    assert cut["reason"] == "SIGINT" and cut["planned_s"] == 30 and cut["actual_s"] == 3.5
    assert "SIGINT" in cut["detail"]


def test_a_worker_that_ended_early_cuts_the_run_short_though_the_harness_ran_on():
    s = span((0.01, "w0", "worker_start", {"pid": 11}), (0.01, "w1", "worker_start", {"pid": 12}),
             (7.25, "w1", "worker_end", {"pid": 12}), (30.2, "w0", "worker_end", {"pid": 11}),
             (30.3, "harness", "run_end", {"reason": "time-limit", "stopped_at": int(30.01e9)}))
    cut = s.interrupted(PLAN, int(30.3e9))
    assert cut["reason"] == "worker-ended-early" and cut["actual_s"] == 7.25 and "w1" in cut["detail"]


def test_a_crashed_slot_counts_too():
    s = span((2.5, "w0.s1", "slot_crash", {"error": "RuntimeError: boom"}),
             (30.3, "harness", "run_end", {"reason": "time-limit"}))
    cut = s.interrupted(PLAN, int(30.3e9))
    assert cut["actual_s"] == 2.5 and "w0.s1 crashed (RuntimeError: boom)" in cut["detail"]


def test_a_worker_crash_stops_at_the_crash():
    s = span((5.0, "harness", "run_end", {"reason": "worker-crashed", "stopped_at": int(4.2e9)}))
    cut = s.interrupted(PLAN, int(5e9))
    assert cut["reason"] == "worker-crashed" and cut["actual_s"] == 4.2


def test_no_run_end_means_the_harness_was_killed_unless_the_plan_is_unknown():
    s = span((1.0, "w0", "invoke", {}))
    assert s.interrupted(PLAN, int(1e9))["reason"] == "harness-killed"
    assert s.interrupted({}, int(1e9)) is None


def _rewrite_run_end(src: Path, dst: Path, **fields) -> Path:
    shutil.copytree(src, dst)
    lines = [json.loads(l) for l in (dst / "history.jsonl").read_text().splitlines()]
    for e in lines:
        if e["type"] == "run_end":
            e.update(fields)
    (dst / "history.jsonl").write_text("".join(json.dumps(e) + "\n" for e in lines))
    return dst


def test_an_interrupted_clean_run_is_inconclusive(tmp_path):
    assert check_run(DATA / "incident-token-cas-ok")["valid"] is True
    run = _rewrite_run_end(DATA / "incident-token-cas-ok", tmp_path / "run", reason="interrupted",
                           signal="SIGTERM", stopped_at=1_800_000_000)
    r = check_run(run)
    assert r["valid"] == "unknown"
    assert r["interrupted"] == {"reason": "SIGTERM", "planned_s": 3, "actual_s": 1.8,
                                "detail": "the harness got SIGTERM and stopped the workers"}
    assert any("cut short (SIGTERM) after 1.8 s of the planned 3 s" in x for x in r["reasons"])


def test_an_interrupted_run_with_a_proven_violation_stays_invalid(tmp_path):
    run = _rewrite_run_end(DATA / "incident-plain-del-bad", tmp_path / "run", reason="interrupted",
                           signal="SIGINT", stopped_at=1_800_000_000)
    r = check_run(run)
    assert r["valid"] is False and r["interrupted"]["reason"] == "SIGINT"
    assert r["reasons"][0].startswith("1 foreign release")
    assert any("cut short" in x for x in r["reasons"])
