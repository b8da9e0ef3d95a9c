"""The one-way partition: a fault added through the registry alone (its module and these tests)."""
import json
from types import SimpleNamespace

import pytest

from leasecheck.harness.errors import UsageError
from leasecheck.harness.faults import FAULTS, nemesis_entries, nemesis_help
from leasecheck.harness.faults.oneway import judge
from leasecheck.harness.nemesis.heal import UNDO
from leasecheck.harness.settings.scenario import load_scenario


def _cfg(**kw):
    return SimpleNamespace(**{"ttl_s": 1.0, "time_limit_s": 30.0, "store_url": None, "backend": "embedded", **kw})


def test_it_is_registered_with_what_it_declares():
    f = FAULTS["oneway"]
    assert f.targets == ("replies", "requests") and f.default_target == "replies"
    assert f.needs_proxy and all(kind in UNDO for kind in f.undoes)
    assert "oneway" in nemesis_help() and "replies/requests" in nemesis_help()


def test_the_flag_and_a_scenario_read_it():
    assert nemesis_entries("oneway,oneway:requests", _cfg()) == [("oneway", "replies", None),
                                                                 ("oneway", "requests", None)]
    with pytest.raises(UsageError, match="oneway targets are replies, requests"):
        nemesis_entries("oneway:both", _cfg())


def test_a_scenario_event_and_its_typos(tmp_path):
    f = tmp_path / "s.toml"
    f.write_text('[[event]]\nat = "1s"\nfault = "oneway"\nduration = "2s"\n')
    _, (step,) = load_scenario(f)
    assert (step["fault"], step["target"], step["duration"]) == ("oneway", "replies", 2.0)
    f.write_text('[[event]]\nat = "1s"\nfault = "oneway"\ntarget = "replys"\nduration = "2s"\n')
    with pytest.raises(UsageError, match=r"s.toml:4 .*oneway targets are replies, requests, not 'replys'"):
        load_scenario(f)


@pytest.mark.parametrize("target,answered,applied,took", [
    ("replies", False, True, True), ("replies", False, False, False), ("replies", True, True, False),
    ("requests", False, False, True), ("requests", False, True, False), ("requests", False, None, None),
])
def test_it_judges_the_direction_that_was_cut(target, answered, applied, took):
    assert judge(target, answered, applied)[0] is took


@pytest.mark.integration
def test_cut_replies_run_commands_that_never_answer(leasecheck, tmp_path):
    s = tmp_path / "s.toml"
    s.write_text('[run]\nlease = "token-cas"\nworkers = 3\ntime_limit = "5s"\nclient_timeout = "1s"\n'
                 '[[event]]\nat = "1.5s"\nfault = "oneway"\nduration = "2s"\n')
    r = leasecheck("run", "--scenario", str(s))
    assert r.code != 1, r.out + r.err          # token-cas frees no other claim through a cut
    (end,) = [json.loads(line) for line in (r.run_dir / "history.jsonl").read_text().splitlines()
              if '"fault_end"' in line]
    m = end["measured"]
    assert (end["fault"], end["target"], m["stream"]) == ("oneway", "replies", "downstream")
    assert m["probe_answered"] is False and m["probe_applied"] is True and m["took_effect"] is True
    assert not (r.run_dir / "faults-active.json").exists()      # healed through the ledger
