"""What shrink reads from a run directory (the faults that fired, the properties violated), what
it refuses, and the scenario it writes."""
import json
from types import SimpleNamespace

import pytest

from leasecheck.harness.settings.config import RunConfig
from leasecheck.harness.errors import UsageError
from leasecheck.harness.faults import Step
from leasecheck.harness.settings.scenario import load_scenario
from leasecheck.harness.search.shrink import Candidate, Fault, Replayed, Trial
from leasecheck.harness.search.shrink_run import command_flags, read_run, write_scenario

STEPS = [Step(1.0, "latency", "workers", 1.5, 200, {}), Step(3.0, "pause", "holder", 1.2),
         Step(5.0, "clock", "store", 1.0, 1.5), Step(9.5, "kill", "store", 1.0)]


def run_dir(tmp_path, fired=(0, 1, 2), **cfg):
    d = tmp_path / "run"
    d.mkdir()
    config = RunConfig(lease="naive-del", workers=4, ttl_s=1.0, job_duration="0.2s", time_limit_s=10.0, seed=12,
                       nemesis="pause:holder,latency,clock:store,kill", store_port=40000, run_id="abcd",
                       **cfg)
    config.save(d / "config.json")
    (d / "schedule.json").write_text(json.dumps([s.to_json() for s in STEPS]))
    events = [{"time": 1, "process": "harness", "type": "run_start"}]
    events += [{"time": 2 + n, "process": "nemesis", "type": "fault_start", "fault": STEPS[n].fault, "n": n}
               for n in fired]
    events += [{"time": 99, "process": "nemesis", "type": "fault_not_fired", "n": 3, "fault": "kill"}]
    (d / "history.jsonl").write_text("".join(json.dumps(e) + "\n" for e in events))
    return d


def check(valid=False, violated=("foreign_releases",)):
    """A checker's answer: the verdict, its parts and the faults that fired (results.json's
    ``faults``, one per ``fault_start`` in the history: what shrink takes them from)."""
    parts = [(name, SimpleNamespace(valid=False)) for name in violated] + [("overlap", SimpleNamespace(valid=True))]

    def fake(d, out):
        out.extend(parts)
        history = d / "history.jsonl"
        started = [json.loads(line) for line in history.read_text().splitlines()] if history.is_file() else []
        faults = [{"n": e["n"], "fault": e["fault"]} for e in started if e["type"] == "fault_start"]
        return {"valid": valid, "reasons": ["3 foreign release(s): ..."], "faults": faults}
    return fake


def test_reads_the_faults_that_fired_and_the_properties_violated(tmp_path):
    rec = read_run(run_dir(tmp_path), check(violated=("foreign_releases", "early_loss")))
    assert [(f.n, f.step.fault) for f in rec.faults] == [(0, "latency"), (1, "pause"), (2, "clock")]
    assert [s.fault for s in rec.not_fired] == ["kill"]
    assert rec.violated == {"foreign_releases", "early_loss"}
    assert rec.cfg.seed == 12 and rec.cfg.store_port is None and rec.cfg.run_id == "" and rec.cfg.nemesis is None
    assert rec.candidate == Candidate(rec.faults, 4, 10.0)
    assert rec.tail_s == 1.0 + 0.2 + 1.0


@pytest.mark.parametrize("valid, word", [(True, "VALID"), ("unknown", "INCONCLUSIVE")])
def test_a_run_that_did_not_fail_is_refused(tmp_path, valid, word):
    with pytest.raises(UsageError, match=f"the run did not fail \\({word}\\); shrink needs an INVALID run"):
        read_run(run_dir(tmp_path), check(valid=valid))


def test_an_unfinished_run_is_refused(tmp_path):
    d = run_dir(tmp_path)
    (d / "history.jsonl").unlink()
    with pytest.raises(UsageError, match="no history.jsonl, the run did not finish"):
        read_run(d, check())


def test_the_scenario_written_reads_back_and_says_what_was_removed(tmp_path):
    rec = read_run(run_dir(tmp_path), check())
    kept = Fault(1, Step(1.0, "pause", "holder", 0.6))
    cand = Candidate((kept,), 2, 3.8)
    trial = Trial(cand, "confirm", [Replayed(True, 1)] * 3, True)
    path = tmp_path / "out" / "shrunk.toml"
    removed = write_scenario(rec, cand, trial, path, "INVALID with foreign_releases in 2 of 3 replays")
    assert removed == ["removed kill:store at 9.5 s: it never fired in the recorded run",
                       "removed latency:workers at 1 s (1.5 s)", "removed clock:store at 5 s (1 s)",
                       "moved pause:holder from 3 s to 1 s", "shortened pause:holder from 1.2 s to 0.6 s",
                       "workers 4 -> 2", "time limit 10 s -> 3.8 s"]
    values, steps = load_scenario(path)
    assert steps == [kept.step.to_json()]
    assert values["workers"] == 2 and values["time_limit_s"] == 3.8 and values["seed"] == 12
    assert values["name"] == "naive-del-shrunk" and "nemesis" not in values
    assert "# failed in 3 of 3 replays" in path.read_text()


def test_the_command_carries_what_a_scenario_cannot_say(tmp_path):
    rec = read_run(run_dir(tmp_path, backend="docker", store_image="img:1", audit=False, proxy=True), check())
    assert command_flags(rec) == ["--backend", "docker", "--store-image", "img:1", "--proxy", "--no-audit"]


def test_a_replay_that_could_not_run_counts_as_not_failing_and_says_why(tmp_path, monkeypatch):
    import leasecheck.harness.search.shrink_run as sr
    from leasecheck.harness.errors import StoreError
    seen = []

    class Broken:
        def __init__(self, plan, log):
            seen.append(plan)
            self.run_dir, self.end_reason = tmp_path / "r", "error"

        def execute(self):
            raise StoreError("redis-server did not start")
    monkeypatch.setattr(sr, "preflight", lambda cfg, schedule_from: cfg)
    monkeypatch.setattr(sr, "Run", Broken)
    rec = read_run(run_dir(tmp_path), check())
    r = sr.replayer(rec, check())(Candidate(rec.faults[1:2], 2, 4.2))
    assert not r.failed and r.exit_code == 255 and r.reason == "could not run: redis-server did not start"
    cfg = seen[0]   # what the replay asked for: the candidate's faults as an explicit schedule, no nemesis
    assert cfg.workers == 2 and cfg.time_limit_s == 4.2 and cfg.nemesis is None and cfg.seed == 12
    assert cfg.schedule == [STEPS[1].to_json()] and cfg.results_dir == str(rec.run_dir / "shrink")


def test_a_replay_fails_only_with_a_property_the_recorded_run_violated(tmp_path, monkeypatch):
    import leasecheck.harness.search.shrink_run as sr

    class Done:
        def __init__(self, plan, log):
            self.run_dir, self.end_reason = tmp_path / "r", "time-limit"

        def execute(self):
            return self.run_dir
    monkeypatch.setattr(sr, "preflight", lambda cfg, schedule_from: cfg)
    monkeypatch.setattr(sr, "Run", Done)
    rec = read_run(run_dir(tmp_path), check(violated=("foreign_releases",)))
    other = check(violated=("token_reuse",))
    cand = rec.candidate
    assert sr.replayer(rec, check(violated=("foreign_releases",)))(cand).failed
    assert not sr.replayer(rec, other)(cand).failed                    # another bug: not this one made small
    assert sr.replayer(rec, other, any_violation=True)(cand).failed
