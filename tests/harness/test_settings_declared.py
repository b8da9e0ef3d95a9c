"""Each run setting is declared once (``RunConfig``'s ``Setting``) and everything that lists
settings is generated from it: run's options, the scenario keys, ``--replay``, what a shrink keeps
and what its scenario says. These tests keep those lists from drifting apart again."""
import click

import leasecheck.harness.cli as cli
from leasecheck.harness.search import shrink_run
from leasecheck.harness.settings.config import (RunConfig, defaults, replayed_fields, scenario_keys, settings,
                                                shrink_kept, shrink_reduced, shrink_scenario_fields)
from leasecheck.workloads.leases import BUILTIN

# Replayed, yet not repeated by a shrink's replays: a candidate's explicit schedule replaces the
# random nemesis, and is played as its scenario file will play it (not one fault at a time).
REPLACED_BY_THE_SCHEDULE = {"nemesis", "nemesis_interval_s", "faults_in_turn"}


def test_every_replayed_setting_is_kept_by_a_shrink_unless_declared_otherwise():
    kept, reduced = set(shrink_kept()), set(shrink_reduced())
    assert reduced == {"workers", "time_limit_s"} and reduced <= kept
    left_out = set(replayed_fields()) - kept
    assert left_out == REPLACED_BY_THE_SCHEDULE
    assert all(settings()[f].shrinks == "schedule" for f in left_out)
    assert {"topology", "nodes", "replicas", "sentinels"} <= kept
    assert not hasattr(shrink_run, "KEEP") and not hasattr(shrink_run, "SCENARIO_FIELDS")


def test_a_shrunk_scenario_says_every_kept_setting_a_scenario_can_carry():
    carried = {field for field, _kind in scenario_keys().values()}
    assert set(shrink_scenario_fields()) == (set(shrink_kept()) & carried) - {"name"}
    assert {"topology", "nodes", "replicas", "sentinels"} <= set(shrink_scenario_fields())


def test_run_has_one_option_per_flagged_setting_with_its_default_and_variable():
    options = {p.name: p for p in cli.run.params if isinstance(p, click.Option)}
    for name, s in settings().items():
        if not s.flag:
            continue
        opt = options[name]
        assert opt.opts[0] == s.flag and opt.envvar == s.env == "LEASECHECK_" + s.flag[2:].replace("-", "_").upper()
        if s.kind != "duration":
            assert opt.default == defaults()[name], name
    # hunt and matrix copy run's options
    flagged = {name for name, s in settings().items() if s.flag}
    assert {p.name for p in cli.hunt.params} >= flagged
    assert {p.name for p in cli.matrix.params} >= flagged - {"lease", "nemesis"}
    assert set(settings()) <= {f for f in RunConfig.__dataclass_fields__}


def test_the_lease_help_lists_every_built_in_lease():
    (lease,) = [p for p in cli.run.params if p.name == "lease"]
    assert all(name in lease.help for name in BUILTIN) and len(BUILTIN) >= 13
