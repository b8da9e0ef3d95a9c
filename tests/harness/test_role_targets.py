"""In a replicated run every fault follows the roles: the node a step acts on is chosen when it
starts — a role's node for ``primary``/``replica``, the primary for the run's store or the workers'
path (``pause:store``, ``evict:store``, ``latency:workers``, ``oneway:replies``) — and kept to its
heal; ``evict`` takes node and role targets like the others. Off replicated runs nothing changes."""
import random
from types import SimpleNamespace

import pytest

from leasecheck.harness.settings.config import RunConfig
from leasecheck.harness.errors import UsageError
from leasecheck.harness.faults import FAULTS, FaultContext, Step
from leasecheck.harness.nemesis.heal import Ledger
from leasecheck.harness.stores.node import Node, NodeFiles
from leasecheck.harness.run.preflight import preflight


class _Roles:
    """The replication's answers: node2 is primary now (after a failover)."""

    def __init__(self, nodes):
        self.nodes = nodes

    def primary(self):
        return self.nodes[1]

    def replicas(self):
        return [self.nodes[0]]


def _ctx(tmp_path, replicated=True):
    nodes = [Node(name, SimpleNamespace(), NodeFiles.of(tmp_path, name, alone=False)) for name in ("node1", "node2")]
    return FaultContext(cfg=None, run_dir=tmp_path, ledger=Ledger(tmp_path), workers=[], holders=None,
                        rng=random.Random(1), nodes=nodes, replication=_Roles(nodes) if replicated else None)


@pytest.mark.parametrize("fault,target", [("pause", "store"), ("pause", "primary"), ("clock", "store"),
                                          ("evict", "store"), ("evict", "primary"), ("latency", "workers"),
                                          ("partition", "workers"), ("partition", "primary")])
def test_the_store_and_the_workers_path_mean_the_primary_when_the_step_starts(tmp_path, fault, target):
    ctx = _ctx(tmp_path)
    step = Step(1.0, fault, target, 2.0)
    pinned, recorded = ctx.pin(step, FAULTS[fault])
    assert pinned.target == "node2" and recorded == {"node": "node2"}
    assert ctx.node_of(pinned) is ctx.nodes[1] and ctx.node_for(pinned.target) is ctx.nodes[1]
    assert FAULTS[fault].acts_as(pinned.target) == FAULTS[fault].acts_as(target if target != "primary"
                                                                          else FAULTS[fault].node_target)


def test_a_direction_on_the_workers_path_is_pinned_to_the_primary_in_its_params(tmp_path):
    ctx = _ctx(tmp_path)
    pinned, recorded = ctx.pin(Step(1.0, "oneway", "replies", 2.0), FAULTS["oneway"])
    assert pinned.target == "replies" and pinned.params == {"node": "node2"} and recorded == {"node": "node2"}
    assert ctx.node_of(pinned) is ctx.nodes[1]


@pytest.mark.parametrize("fault,target", [("pause", "holder"), ("pause", "workers"), ("clock", "workers"),
                                          ("pause", "node1"), ("evict", "node1"), ("latency", "node1")])
def test_targets_that_are_no_store_or_name_a_node_are_left_alone(tmp_path, fault, target):
    ctx = _ctx(tmp_path)
    step = Step(1.0, fault, target, 2.0)
    assert ctx.pin(step, FAULTS[fault]) == (step, {})


def test_a_replica_target_names_the_node_in_that_role(tmp_path):
    ctx = _ctx(tmp_path)
    pinned, recorded = ctx.pin(Step(1.0, "pause", "replica", 2.0), FAULTS["pause"])
    assert pinned.target == "node1" and recorded == {"node": "node1"}


@pytest.mark.parametrize("fault,target", [("pause", "store"), ("evict", "store"), ("oneway", "replies"),
                                          ("latency", "workers")])
def test_off_replicated_runs_nothing_is_pinned_and_the_store_is_the_first_node(tmp_path, fault, target):
    ctx = _ctx(tmp_path, replicated=False)
    step = Step(1.0, fault, target, 2.0)
    assert ctx.pin(step, FAULTS[fault]) == (step, {})
    assert ctx.node_of(step) is ctx.nodes[0]


def test_evict_takes_node_and_role_targets_and_refuses_a_replica():
    cfg = preflight(RunConfig(topology="replicated")).cfg
    for target in ("primary", "node2", "store"):
        FAULTS["evict"].validate(cfg, target)
    assert FAULTS["evict"].acts_as("primary") == "store"
    with pytest.raises(UsageError, match="evict:replica: a replica evicts nothing of its own.*use evict:primary"):
        FAULTS["evict"].validate(cfg, "replica")
    with pytest.raises(UsageError, match="evict:node3: this run's nodes are node1, node2"):
        FAULTS["evict"].validate(cfg, "node3")
    single = preflight(RunConfig()).cfg
    with pytest.raises(UsageError, match="only a replicated run has a primary"):
        FAULTS["evict"].validate(single, "primary")
