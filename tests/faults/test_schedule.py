"""Random schedules and scenario timelines: what is drawn, what is refused before anything starts,
and what the nemesis records for a step whose time never came."""
import random
from types import SimpleNamespace

import pytest

from leasecheck.harness.settings.config import RunConfig, replayed_fields
from leasecheck.harness.run.host import default_store_bin
from leasecheck.harness.run.preflight import late_steps, validate
from leasecheck.harness.errors import UsageError
from leasecheck.harness.faults import FaultContext, Step, nemesis_entries
from leasecheck.harness.nemesis.heal import Ledger
from leasecheck.harness.nemesis.driver import Nemesis, random_schedule


def _cfg(**kw):
    return SimpleNamespace(**{"ttl_s": 1.0, "time_limit_s": 60.0, "store_url": None, "backend": "embedded",
                              "store_bin": default_store_bin(), **kw})


def _sizes(spec, seeds=range(60)):
    out = []
    for seed in seeds:
        steps = random_schedule([tuple(spec)], _cfg(), random.Random(seed), 5.0)
        out += [s.size for s in steps]
    return out


def test_random_store_clock_jumps_go_forward_by_default():
    sizes = _sizes(("clock", "store", None))
    assert len(sizes) > 300 and all(s > 0 for s in sizes)
    assert min(sizes) >= 0.5 and max(sizes) <= 3.0          # 0.5 to 3 x the 1 s TTL


def test_backward_store_clock_jumps_are_opt_in():
    assert all(s < 0 for s in _sizes(("clock", "store", "backward")))
    both = _sizes(("clock", "store", "both"))
    assert any(s < 0 for s in both) and any(s > 0 for s in both)
    workers = _sizes(("clock", "workers", None))              # a worker's clock: either way
    assert any(s < 0 for s in workers) and any(s > 0 for s in workers)


def test_the_direction_is_parsed_and_checked():
    cfg = _cfg()
    assert nemesis_entries("clock:store:both,pause", cfg) == [("clock", "store", "both"),
                                                                  ("pause", "holder", None)]
    with pytest.raises(UsageError, match="clock takes forward, backward, both after its target"):
        nemesis_entries("clock:store:sideways", cfg)
    with pytest.raises(UsageError, match="pause takes no option"):
        nemesis_entries("pause:holder:both", cfg)


@pytest.mark.parametrize("limit", [3.0, 7.5, 20.0, 61.0])
def test_a_random_schedule_never_draws_a_step_that_cannot_fire(limit):
    faults = [("pause", "holder"), ("clock", "store"), ("evict", "store"), ("latency", "workers")]
    for seed in range(100):
        for interval in (1.0, 4.0, 10.0):
            for s in random_schedule(faults, _cfg(time_limit_s=limit), random.Random(seed), interval):
                assert s.at + s.duration <= limit - 0.2


def _steps(*events):
    return [{"at": at, "fault": "pause", "target": "holder", "duration": d, "size": None, "params": {}}
            for at, d in events]


def test_a_scenario_fault_past_the_time_limit_is_announced_not_refused():
    """A scenario shortened with --time-limit runs; the steps it cuts are named before it starts
    (and, at its end, recorded as not fired, which makes the run inconclusive)."""
    cfg = RunConfig(time_limit_s=8, schedule=_steps((2, 1), (10, 3)))
    validate(cfg)
    (note,) = late_steps(cfg)
    assert "at 10s (lasting 3s) starts after --time-limit 8s and will not fire" in note
    assert "give --time-limit 13s or more" in note
    (note,) = late_steps(RunConfig(time_limit_s=12, schedule=_steps((10, 3))))
    assert "ends after --time-limit 12s and will be healed when the run ends" in note
    assert late_steps(RunConfig(time_limit_s=13, schedule=_steps((10, 3)))) == []   # fits exactly


def test_a_random_schedule_with_no_room_for_a_fault_is_refused():
    with pytest.raises(UsageError, match="no fault fits in --time-limit 1.5s"):
        validate(RunConfig(time_limit_s=1.5, nemesis="pause", seed=1))
    validate(RunConfig(time_limit_s=6, nemesis="pause", nemesis_interval_s=2, seed=1))


class _History:
    def __init__(self):
        self.events = []

    def record(self, process, type, **fields):
        self.events.append({"process": process, "type": type, **fields})


def test_a_step_whose_time_never_came_is_recorded_with_why(tmp_path):
    import time

    ctx = FaultContext(cfg=SimpleNamespace(store_port=None), run_dir=tmp_path, ledger=Ledger(tmp_path),
                       workers=[], holders=None, rng=random.Random(1))
    history = _History()
    steps = [Step(0.0, "pause", "worker", 0.05), Step(30.0, "pause", "worker", 1.0)]
    nemesis = Nemesis(ctx, steps, history, time.monotonic_ns())
    nemesis.start()
    time.sleep(0.3)
    nemesis.stop("interrupted")
    kinds = [(e["type"], e["n"]) for e in history.events]
    assert kinds == [("fault_start", 0), ("fault_end", 0), ("fault_not_fired", 1)]
    end, missed = history.events[1], history.events[2]
    assert end["measured"]["stopped_s"] == 0.0 and end["measured"]["processes"] == []  # no worker to stop
    assert missed["at"] == 30.0 and missed["why"].startswith("the run ended (interrupted) at 0.")


class _Slow:
    """A fault that waits ``wait_s`` for its target before it takes hold, then probes for
    ``probe_s`` while in place (as pause:holder waits for a holder and latency probes)."""
    name, lasts_ttls = "slow", False

    def __init__(self, wait_s: float, probe_s: float, log: list):
        self.wait_s, self.probe_s, self.log = wait_s, probe_s, log

    def start(self, ctx, step):
        import time
        from leasecheck.harness.faults.base import Active
        time.sleep(self.wait_s)
        active = Active(step, [])
        self.log.append(("in", step.at, time.monotonic()))
        time.sleep(self.probe_s)
        return active

    def stop(self, ctx, active):
        import time
        self.log.append(("out", active.step.at, time.monotonic()))
        return {"held_s": time.monotonic() - active.started}


def _play(tmp_path, monkeypatch, fault, steps, in_turn):
    import time
    from leasecheck.harness.nemesis import driver as nemesis_module
    monkeypatch.setitem(nemesis_module.FAULTS, "slow", fault)
    ctx = FaultContext(cfg=SimpleNamespace(store_port=None), run_dir=tmp_path, ledger=Ledger(tmp_path),
                       workers=[], holders=None, rng=random.Random(1))
    history = _History()
    t0 = time.monotonic_ns()
    nemesis = Nemesis(ctx, steps, history, t0, in_turn=in_turn)
    nemesis.start()
    time.sleep(sum(s.duration for s in steps) + 1.2)
    nemesis.stop("time-limit")
    return [(what, at, t - t0 / 1e9) for what, at, t in fault.log], history


def test_a_fault_lasts_its_duration_from_when_it_took_hold_not_after_its_probes(tmp_path, monkeypatch):
    log, history = _play(tmp_path, monkeypatch, _Slow(0.0, 0.3, []), [Step(0.0, "slow", "x", 0.4)], False)
    (_, _, t_in), (_, _, t_out) = log
    assert 0.35 <= t_out - t_in < 0.55, log          # 0.4 s, not 0.4 s after the 0.3 s probe
    assert history.events[-1]["type"] == "fault_end"


def test_a_drawn_schedule_plays_one_fault_at_a_time(tmp_path, monkeypatch):
    # The first fault waits 0.3 s for its target, so it is in place until about 0.7 s, past the
    # second's time (0.5 s). In turn, the second starts after the first's heal; a scenario's
    # steps may overlap, each in its own thread.
    steps = [Step(0.0, "slow", "x", 0.4), Step(0.5, "slow", "x", 0.2)]
    log, _ = _play(tmp_path, monkeypatch, _Slow(0.3, 0.0, []), steps, in_turn=True)
    times = {(what, at): t for what, at, t in log}
    assert times[("in", 0.5)] >= times[("out", 0.0)], log
    log, history = _play(tmp_path, monkeypatch, _Slow(0.3, 0.0, []), steps, in_turn=False)
    times = {(what, at): t for what, at, t in log}
    order = [(e["type"], e["n"]) for e in history.events]
    assert order.index(("fault_start", 1)) < order.index(("fault_end", 0)), order   # they overlap
    # ... and the second's wait for its target does not hold up the first's end (0.7 s)
    assert times[("out", 0.0)] < 0.78 and times[("out", 0.0)] < times[("in", 0.5)], log


def test_a_random_schedule_is_played_in_turn_and_so_is_its_replay():
    cfg = validate(RunConfig(time_limit_s=6, nemesis="pause", nemesis_interval_s=2, seed=1))
    assert cfg.faults_in_turn is True
    assert validate(RunConfig(time_limit_s=6, schedule=_steps((1, 1)))).faults_in_turn is False
    # --replay repeats every setting of config.json, this one included
    assert "faults_in_turn" in replayed_fields()
    assert validate(RunConfig(time_limit_s=6, schedule=_steps((1, 1)), faults_in_turn=True)).faults_in_turn
