"""The diagnosis names the measured cause, and witness timelines show what the nemesis did."""
import json
import shutil
from pathlib import Path

from leasecheck.checkers import check_run
from leasecheck.checkers.present.diagnosis import diagnose
from leasecheck.checkers.present.fault_report import lines, markdown

DATA = Path(__file__).parent / "data"
TOO_SHORT = "the lease is too short for these jobs"
PAUSED = "the holder was paused past its deadline"


def with_faults(src: Path, dst: Path, *faults: dict) -> Path:
    """A copy of the saved run `src` with fault_start/fault_end events added to its history."""
    shutil.copytree(src, dst)
    events = [json.loads(l) for l in (dst / "history.jsonl").read_text().splitlines()]
    for n, f in enumerate(faults):
        common = {"process": "nemesis", "fault": f["fault"], "target": f["target"], "n": n}
        events.append({"time": int(f["start"] * 1e9), "type": "fault_start", "requested": f["requested"], **common})
        if f.get("end") is not None:
            events.append({"time": int(f["end"] * 1e9), "type": "fault_end", "measured": f["measured"], **common})
    events.sort(key=lambda e: e["time"])
    for i, e in enumerate(events):
        e["index"] = i
    (dst / "history.jsonl").write_text("".join(json.dumps(e) + "\n" for e in events))
    return dst


# The saved runs incident-token-cas-ok and incident-plain-del-bad: A (w0) claims at 0.011 s with a
# 1 s lease and works until 1.7 s; its claim expires at 1.011 s; B (w1) claims at 1.051 s; in the
# plain-del run A's DEL removes B's claim at 1.502 s.
PAUSE_A = {"fault": "pause", "target": "holder", "start": 0.5, "end": 1.45,
           "requested": {"duration_s": 0.95, "size": None},
           "measured": {"paused_s": 0.95, "processes": ["w0"]}}


def test_without_faults_a_deadline_passed_mid_job_is_a_lease_too_short():
    r = check_run(DATA / "incident-token-cas-ok")
    assert r["lost_while_held"]["deadline_passed"] == 1 and r["lost_while_held"]["holder_paused"] == 0
    assert any(TOO_SHORT in s for s in r["diagnosis"])
    assert not any(PAUSED in s for s in r["diagnosis"])
    assert TOO_SHORT in r["reasons"][-1]


def test_a_holder_paused_past_its_deadline_is_not_called_a_lease_too_short(tmp_path):
    run = with_faults(DATA / "incident-token-cas-ok", tmp_path / "run", PAUSE_A)
    r = check_run(run)
    assert r["overlap"]["causes"]["holder_paused"] == 1 and r["overlap"]["causes"]["deadline_passed"] == 0
    assert r["lost_while_held"]["holder_paused"] == 1 and r["lost_while_held"]["deadline_passed"] == 0
    assert any(PAUSED in s for s in r["diagnosis"])
    assert not any(TOO_SHORT in s for s in r["diagnosis"])


def test_a_pause_that_ended_before_the_deadline_does_not_excuse_it(tmp_path):
    early = dict(PAUSE_A, start=0.2, end=0.6, measured={"paused_s": 0.4, "processes": ["w0"]})
    r = check_run(with_faults(DATA / "incident-token-cas-ok", tmp_path / "run", early))
    assert r["lost_while_held"]["deadline_passed"] == 1 and r["lost_while_held"]["holder_paused"] == 0
    assert any(TOO_SHORT in s for s in r["diagnosis"])


def test_a_pause_of_another_worker_does_not_excuse_it(tmp_path):
    other = dict(PAUSE_A, measured={"paused_s": 0.95, "processes": ["w2"]})
    r = check_run(with_faults(DATA / "incident-token-cas-ok", tmp_path / "run", other))
    assert r["lost_while_held"]["deadline_passed"] == 1 and r["lost_while_held"]["holder_paused"] == 0


def test_the_paused_worker_is_found_by_pid_too(tmp_path):
    by_pid = dict(PAUSE_A, measured={"paused_s": 0.95, "pids": [4242]})
    run = with_faults(DATA / "incident-token-cas-ok", tmp_path / "run", by_pid)
    history = run / "history.jsonl"
    events = [json.loads(l) for l in history.read_text().splitlines()]
    events.insert(1, {"time": 1, "process": "w0", "type": "worker_start", "pid": 4242})
    history.write_text("".join(json.dumps(dict(e, index=i)) + "\n" for i, e in enumerate(events)))
    assert check_run(run)["lost_while_held"]["holder_paused"] == 1


def test_witness_rows_show_the_pause_in_the_same_timeline(tmp_path):
    r = check_run(with_faults(DATA / "incident-plain-del-bad", tmp_path / "run", PAUSE_A))
    w = r["witness"]
    assert w["columns"][-1] == "Nemesis"
    rows = {row["time_s"]: row["cells"] for row in w["rows"]}
    assert rows[0.5] == ["paused (SIGSTOP)", "—", "—", "", "pauses w0 (SIGSTOP)"]
    assert rows[1.011][0] == "paused (SIGSTOP)" and rows[1.011][3] == "absent: A's deadline passed"
    assert rows[1.051][0] == "paused (SIGSTOP)"
    assert rows[1.45][0] == "still working" and rows[1.45][-1] == "resumes w0 (SIGCONT)"
    assert rows[1.502][0] == "DEL deletes B's claim" and rows[1.502][-1] == ""
    assert [row["time_s"] for row in w["rows"]] == sorted(row["time_s"] for row in w["rows"])
    assert "A was paused past its deadline" in w["summary"]
    assert "| 0.500 | paused (SIGSTOP) |" in w["markdown"]


def test_without_a_pause_the_witness_says_still_working():
    w = check_run(DATA / "incident-plain-del-bad")["witness"]
    assert "Nemesis" not in w["columns"]
    assert [row["cells"][0] for row in w["rows"]][1:4] == ["still working", "still working", "DEL deletes B's claim"]


def test_a_store_fault_shows_as_a_nemesis_row(tmp_path):
    jump = {"fault": "clock", "target": "store", "start": 1.2, "end": 1.6,
            "requested": {"duration_s": 0.4, "size": 4.0},
            "measured": {"offsets_s": {"store": 4.0}, "store_skew_s": 4.0004}}
    w = check_run(with_faults(DATA / "incident-plain-del-bad", tmp_path / "run", jump))["witness"]
    rows = {row["time_s"]: row["cells"] for row in w["rows"]}
    assert rows[1.2][-1] == "store clock jumped +4.000 s (measured +4.000 s)"
    assert rows[1.2][0] == "still working"          # a store fault pauses nobody
    assert rows[1.6][-1] == "store clock set back"


def _result(**lost) -> dict:
    causes = {c: 0 for c in ("deadline_passed", "holder_paused", "clock_jump", "foreign_release",
                             "eviction", "store_restart", "unknown")}
    return {"lost_while_held": causes | lost, "releases_found_nothing": sum(lost.values()), "faults": []}


def test_each_cause_has_its_own_words():
    said = {cause: " ".join(diagnose(_result(**{cause: 2}))) for cause in
            ("deadline_passed", "holder_paused", "clock_jump", "eviction", "store_restart", "foreign_release")}
    assert TOO_SHORT in said["deadline_passed"]
    assert PAUSED in said["holder_paused"]
    assert "store's clock jumped forward" in said["clock_jump"]
    assert "store evicted 2 claims" in said["eviction"]
    assert "store restarted empty and lost 2 claims" in said["store_restart"]
    assert "another attempt's command" in said["foreign_release"]
    assert all(TOO_SHORT not in text for cause, text in said.items() if cause != "deadline_passed")


def test_early_loss_is_named_when_present():
    r = _result(clock_jump=3) | {"early_loss": {"count": 3, "by_cause": {"clock_jump": 3, "eviction": 0,
                                                                          "store_restart": 0}}}
    first = diagnose(r)[0]
    assert first.startswith("the store lost 3 claims before their deadline") and "clock jump 3" in first
    assert "broke the lease's promise" in first


def test_nothing_lost_and_history_only():
    assert diagnose(_result()) == ["no claim was lost before its holder released it"]
    no_audit = {"lost_while_held": None, "overlap": {"causes": {"unknown": 2}}, "releases_found_nothing": 2,
                "faults": [{"fault": "pause"}]}
    assert "cannot tell why; faults acted (pause)" in diagnose(no_audit)[0]


def test_fault_lines_show_requested_against_measured_and_what_did_not_take_effect():
    result = {"faults": [
        {"fault": "pause", "target": "holder", "start_s": 2.0, "end_s": 3.5, "requested": {"duration_s": 1.5},
         "measured": {"paused_s": 1.4976, "processes": ["w0"]}, "took_effect": True},
        {"fault": "clock", "target": "store", "start_s": 4.0, "end_s": 7.0,
         "requested": {"duration_s": 3.0, "size": 4.0}, "measured": {"store_skew_s": -0.0001},
         "took_effect": False, "why": "the store's clock did not move"}],
        "faults_not_fired": [{"fault": "kill", "target": "store", "at": 40.0, "why": "after the run's end"}]}
    pause, clock, kill = lines(result)
    assert pause == ("pause:holder 2.000–3.500 s", "requested duration 1.5 s; measured paused 1.498 s; "
                     "processes w0", "took effect")
    assert clock[1] == "requested duration 3 s; size +4.000 s; measured store skew -0.000 s"
    assert clock[2] == "did not take effect: the store's clock did not move"
    assert kill == ("kill:store at 40 s", "never fired", "did not take effect: after the run's end")
    md = markdown(result)
    assert md.startswith("## Faults") and md.count("\n| ") == 4
    assert markdown({"faults": []}) == ""


def test_a_claim_that_ran_out_between_the_job_and_its_release_counts_as_lost():
    from test_claims_model import K, Run

    run = Run()
    run.call(10, "w0.s0.0", "acquire", "ok", True, ("SET", K, "a", "NX", "PX", "100"))   # expires at 111 ms
    run.job(13, "w0.s0.0", "job_start")
    run.job(90, "w0.s0.0", "job_end")
    run.call(150, "w0.s0.0", "release", "ok", False, (("EVAL", "cad", "1", K, "a"), [("get", K)]))
    r = run.check()
    assert r["claims"]["expired_after_job"] == 1 and r["releases_found_nothing"] == 1
    assert r["lost_while_held"]["deadline_passed"] == 1
    assert any(TOO_SHORT in s for s in r["diagnosis"])


def test_an_evicted_claim_and_the_eviction_are_in_the_witness():
    from test_claims_model import K, Run

    run = Run()
    run.call(10, "w0.s0.0", "acquire", "ok", True, ("SET", K, "a", "NX", "PX", "10000"))
    run.job(13, "w0.s0.0", "job_start")
    run.line(20, "127.0.0.1:9999", "ECHO", "leasecheck:fault:0:evict:start")
    run.ev(20, "nemesis", "fault_start", fault="evict", target="store", n=0, requested={"duration_s": 0.06})
    run.call(50, "w1.s0.0", "acquire", "ok", True, ("SET", K, "b", "NX", "PX", "10000"))   # A's claim was evicted
    run.job(53, "w1.s0.0", "job_start")
    run.line(80, "127.0.0.1:9999", "ECHO", "leasecheck:fault:0:evict:end")
    run.ev(80, "nemesis", "fault_end", fault="evict", target="store", n=0, measured={"evicted_keys": 1})
    run.job(90, "w0.s0.0", "job_end")
    run.call(100, "w0.s0.0", "release", "ok", True, ("DEL", K))                          # deletes B's claim
    r = run.check()
    assert r["claims"]["evicted"] == 1 and r["foreign_releases"] == 1
    assert r["lost_while_held"]["eviction"] == 1
    assert any("the store evicted 1 claim before its holder released it" == s for s in r["diagnosis"])
    rows = [(row["time_s"], row["cells"]) for row in r["witness"]["rows"]]
    assert r["witness"]["columns"][-1] == "Nemesis"
    assert (0.02, ["still working", "—", "", "eviction: store memory squeezed, keys evicted at random"]) in rows
    assert any(cells[2].startswith("absent: the store evicted A's claim") for _, cells in rows)
    assert (0.08, ["still working", "still working", "", "eviction ends (memory limit restored)"]) in rows


def test_found_nothing_without_a_cause_says_which_evidence_is_missing():
    from leasecheck.checkers.present.diagnosis import diagnose
    one = {"releases_found_nothing": 1, "faults": [], "audit": {"present": False}}
    assert "without the store's audit" in diagnose(one)[0]
    several = {"releases_found_nothing": 1, "faults": [],
               "audit": {"present": True, "nodes": {"node1": {}, "node2": {}, "node3": {}}}}
    said = diagnose(several)[0]
    assert "without the store's audit" not in said and "several masters" in said
