"""The named fault mixes (`--nemesis default`, `swarm`): drawn from the seed (same seed, same
steps and draw; another seed, another swarm), late replies in the background for the whole run,
pauses that never overlap and end before the time limit, a renewer aimed at only for a lease that
renews; the nemesis plays the pauses in turn while the background step stays in place; the
preflight records the draw in the config."""
import pytest

from leasecheck.harness.errors import UsageError
from leasecheck.harness.nemesis import mixes
from leasecheck.harness.nemesis.driver import Nemesis
from leasecheck.harness.run.preflight import preflight
from leasecheck.harness.settings.config import RunConfig


def _cfg(**kw):
    return RunConfig(**({"seed": 5, "ttl_s": 1.0, "time_limit_s": 30.0} | kw))


def _pauses(steps):
    return [s for s in steps if s.fault == "pause"]


def test_default_late_replies_all_run_and_aimed_pauses_in_turn():
    cfg = _cfg()
    steps, drawn = mixes.draw("default", cfg, renews=False)
    late = steps[0]
    assert (late.fault, late.target, late.at, late.size, late.params) == ("latency", "workers", 0.0, 100.0,
                                                                           {"background": True})
    assert late.duration <= cfg.time_limit_s - mixes.END_MARGIN_S
    pauses = _pauses(steps)
    assert len(pauses) >= 15                          # about one every 1.6 TTLs over 30 s
    for a, b in zip(pauses, pauses[1:]):
        assert b.at >= a.at + a.duration + 0.1        # healed before the next starts
    assert all(p.duration == mixes.PAUSE_TTLS * cfg.ttl_s and p.duration > cfg.ttl_s for p in pauses)
    assert pauses[-1].at + 2 * pauses[-1].duration <= cfg.time_limit_s - mixes.END_MARGIN_S   # slack for a wait
    targets = {p.target for p in pauses}
    assert "releaser" in targets and "renewer" not in targets and targets <= set(mixes.PAUSES)
    assert drawn["mix"] == "default" and "renewer" not in drawn["pauses"]
    assert "renewer" in mixes.draw("default", cfg, renews=True)[1]["pauses"]


def test_the_draw_follows_the_seed():
    a, b = mixes.draw("swarm", _cfg(seed=1), True), mixes.draw("swarm", _cfg(seed=1), True)
    assert a == b
    draws = [mixes.draw("swarm", _cfg(seed=s), True)[1] for s in range(20)]
    assert len({repr(d) for d in draws}) > 10         # each seed its own mix
    for d in draws:
        assert d["pauses"] and set(d["pauses"]) <= set(mixes.PAUSES)
        assert 1.05 <= d["pause_ttls"] <= 2.0
    assert any(d["latency_ms"] is None for d in draws) and any(d["latency_ms"] for d in draws)


def test_the_preflight_draws_the_mix_and_records_it(tmp_path):
    plan = preflight(_cfg(lease="token-cas-renew", nemesis="default", results_dir=str(tmp_path)))
    assert plan.needs_proxy and plan.cfg.faults_in_turn
    assert plan.cfg.nemesis_drawn["mix"] == "default" and "renewer" in plan.cfg.nemesis_drawn["pauses"]
    assert plan.steps[0].params == {"background": True}
    assert "nemesis_drawn" in plan.cfg.to_json()
    again = preflight(_cfg(lease="token-cas-renew", nemesis="default", results_dir=str(tmp_path)))
    assert [s.to_json() for s in again.steps] == [s.to_json() for s in plan.steps]
    with pytest.raises(UsageError, match="no pause fits in --time-limit 1s"):
        preflight(_cfg(nemesis="swarm", time_limit_s=1.0, results_dir=str(tmp_path)))


def test_in_turn_waits_for_the_last_step_not_in_the_background():
    steps, _ = mixes.draw("default", _cfg(), renews=False)
    nemesis = Nemesis.__new__(Nemesis)
    nemesis.steps, nemesis.in_turn = steps, True
    assert nemesis._previous_in_turn(0) is None          # the late replies wait for nothing
    assert nemesis._previous_in_turn(1) is None          # the first pause: only the background before it
    assert nemesis._previous_in_turn(2) == 1 and nemesis._previous_in_turn(3) == 2
    nemesis.in_turn = False
    assert nemesis._previous_in_turn(3) is None


def test_a_replay_plays_the_recorded_steps_of_a_named_mix(tmp_path):
    plan = preflight(_cfg(nemesis="swarm", results_dir=str(tmp_path)))
    recorded = [s.to_json() for s in plan.steps]
    replayed = preflight(_cfg(nemesis="swarm", seed=99, schedule=recorded, results_dir=str(tmp_path)))
    assert [s.to_json() for s in replayed.steps] == recorded     # the steps as recorded, not a new draw
    assert replayed.needs_proxy == plan.needs_proxy


def test_a_named_mix_written_as_a_scenario_reads_back(tmp_path):
    from leasecheck.harness.settings.scenario import load_scenario
    from leasecheck.harness.settings.scenario_dump import dump
    steps, _ = mixes.draw("default", _cfg(time_limit_s=8.0), renews=False)
    path = tmp_path / "shrunk.toml"
    path.write_text(dump("shrunk", {"lease": "get-compare-del", "time_limit_s": 8.0}, steps))
    _, events = load_scenario(path)
    assert [(e["at"], e["fault"], e["target"], e["duration"], e["size"]) for e in events] == \
        [(s.at, s.fault, s.target, s.duration, s.size) for s in steps]
