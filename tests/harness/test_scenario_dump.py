"""A written scenario reads back as the same configuration and schedule."""
import pytest

from leasecheck.harness.faults import Step
from leasecheck.harness.settings.scenario import load_scenario
from leasecheck.harness.settings.scenario_dump import dump


def test_a_written_scenario_reads_back_the_same(tmp_path):
    steps = [Step(1.0, "latency", "workers", 1.786, 200, {"jitter_ms": 20}),
             Step(3.232, "kill", "store", 1.079),
             Step(5.577, "pause", "holder", 0.479),
             Step(7.971, "clock", "store", 1.573, 2.110062, {}),
             Step(9.5, "clock", "store", 2.0, -0.25, {"mode": "strobe", "period": 0.05})]
    run = {"lease": "naive-del", "workers": 2, "slots": 1, "jobs": 1, "ttl_s": 2.0, "job_duration": "0.3s",
           "retry_delay": "5ms..20ms", "time_limit_s": 12.479, "seed": 7, "client_timeout_s": None,
           "sink": False, "name": "naive-del-shrunk"}
    path = tmp_path / "s.toml"
    path.write_text(dump("naive-del-shrunk", run, steps, comment="shrunk from a run\nsecond line",
                         description='a "quoted" description'))
    values, loaded = load_scenario(path)
    assert values == {k: v for k, v in run.items() if v is not None}
    assert loaded == [s.to_json() for s in steps]
    assert path.read_text().startswith("# shrunk from a run\n# second line\nname = ")


def test_a_step_no_key_can_carry_is_refused():
    with pytest.raises(ValueError, match="pause event has no key for its size"):
        dump("x", {}, [Step(1.0, "pause", "holder", 1.0, 3.0)])
