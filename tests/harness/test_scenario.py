"""Scenario files without a run: what a file turns into, and errors with file and line."""
from pathlib import Path

import pytest

from leasecheck.harness.errors import UsageError
from leasecheck.harness.settings.scenario import load_scenario

SCENARIOS = Path(__file__).resolve().parents[2] / "scenarios"


def _load(tmp_path, text, origins=None):
    f = tmp_path / "s.toml"
    f.write_text(text)
    return f, load_scenario(f, origins=origins)


def test_run_options_and_events_become_config_and_steps(tmp_path):
    origins = {}
    f, (values, steps) = _load(tmp_path, 'name = "x"\n[run]\nlease = "naive-del"\nttl = "3s"\ntime-limit = 20\n'
                                         '[[event]]\nat = "9s"\nfault = "clock"\noffset = "-2s"\nduration = "4s"\n'
                                         'mode = "strobe"\nperiod = "50ms"\n'
                                         '[[event]]\nat = "1s"\nfault = "latency"\nlatency = "200ms"\n'
                                         'jitter = "20ms"\nduration = "2s"\n[[event]]\nat = 5\nfault = "pause"\n'
                                         'duration = 1.5\n', origins)
    assert values == {"lease": "naive-del", "ttl_s": 3.0, "time_limit_s": 20.0, "name": "x"}
    assert origins["ttl_s"] == f"file:{f}:4 ttl"
    assert [(s["at"], s["fault"], s["target"]) for s in steps] == [(1.0, "latency", "workers"),
                                                                    (5.0, "pause", "holder"),
                                                                    (9.0, "clock", "store")]
    latency, pause, clock = steps
    assert latency["size"] == 200.0 and latency["params"] == {"jitter_ms": 20.0}
    assert pause["size"] is None and pause["duration"] == 1.5
    assert clock["size"] == -2.0 and clock["params"] == {"mode": "strobe", "period": 0.05}


@pytest.mark.parametrize("name", sorted(p.name for p in SCENARIOS.glob("*.toml")))
def test_the_shipped_scenarios_load(name):
    values, steps = load_scenario(SCENARIOS / name)
    assert values["lease"] and all(s["target"] and s["duration"] > 0 for s in steps)


@pytest.mark.parametrize("text,words", [
    ('[[event]]\nat = "1s"\nfault = "pause"\ntarget = "moon"\nduration = "1s"\n', ["s.toml:4", "pause targets are"]),
    ('[[event]]\nat = "1s"\nfault = "meteor"\nduration = "1s"\n', ["s.toml:3", "no fault named 'meteor'"]),
    ('[[event]]\nat = "1s"\nfault = "pause"\noffset = "1s"\nduration = "1s"\n', ["s.toml:4", "a pause event has no key 'offset'"]),
    ('[[event]]\nat = "1s"\nfault = "clock"\nmode = "wobble"\nduration = "1s"\n', ["s.toml:4", "bump, strobe"]),
    ('[[event]]\nat = "1s"\nfault = "clock"\nduration = "1s"\n\n[[event]]\nfault = "pause"\nduration = "1s"\n',
     ["s.toml:6", "no 'at'"]),
    ('[run]\nworkers = "many"\n', ["s.toml:2", "workers must be a number"]),
])
def test_errors_name_file_and_line(tmp_path, text, words):
    with pytest.raises(UsageError) as e:
        _load(tmp_path, text)
    assert all(w in str(e.value) for w in words), str(e.value)
    assert "--nemesis" not in str(e.value)
