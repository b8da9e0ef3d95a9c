"""A run holds a list of store nodes: one today, ``node1``, whose files keep the run directory's
names; a node among several would name its files after itself; faults find their node by target."""
from __future__ import annotations

import json
import random
from pathlib import Path
from types import SimpleNamespace

import pytest

from leasecheck.harness.settings.config import RunConfig
from leasecheck.harness.faults import FaultContext
from leasecheck.harness.nemesis.heal import Ledger
from leasecheck.harness.run.host import default_store_bin
from leasecheck.harness.stores.node import Node, NodeFiles, nodes_for
from leasecheck.harness.run.preflight import preflight
from leasecheck.harness.run.runner import Run
from leasecheck.harness.stores.embedded import EmbeddedStore


def test_the_only_node_keeps_the_run_directorys_file_names(tmp_path):
    f = NodeFiles.of(tmp_path, "node1", alone=True)
    assert (f.audit, f.clock, f.log, f.faketime, f.suffix) == (
        tmp_path / "audit.log", tmp_path / "store-clock.jsonl", tmp_path / "store.log",
        tmp_path / "faketime" / "store", "")


def test_a_node_among_several_names_its_files_after_itself(tmp_path):
    f = NodeFiles.of(tmp_path, "node2", alone=False)
    assert (f.audit, f.clock, f.log, f.faketime, f.suffix) == (
        tmp_path / "audit-node2.log", tmp_path / "store-clock-node2.jsonl", tmp_path / "store-node2.log",
        tmp_path / "faketime" / "store-node2", "-node2")


def _cfg(**kw):
    base = dict(backend="embedded", store_url=None, store_bin=default_store_bin(), store_port=None,
                store_host="127.0.0.1", store_db=0, store_image=None, run_id="r1")
    return SimpleNamespace(**{**base, **kw})


def test_nodes_for_makes_one_node_with_its_store_and_files(tmp_path):
    (tmp_path / "faketime").mkdir()
    [node] = nodes_for(_cfg(), tmp_path, skew_store=True)
    assert node.name == "node1" and isinstance(node.store, EmbeddedStore)
    assert node.store.log_path == (tmp_path / "store.log").resolve()
    assert node.store.faketime_file == (tmp_path / "faketime" / "store").resolve()
    assert node.admin is node.audit is node.clock is node.proxy is None     # nothing started yet
    [plain] = nodes_for(_cfg(), tmp_path, skew_store=False)
    assert plain.store.faketime_file is None


def test_several_nodes_get_distinct_files(tmp_path):
    (tmp_path / "faketime").mkdir()
    nodes = nodes_for(_cfg(), tmp_path, skew_store=True, names=("node1", "node2", "node3"))
    logs = {n.store.log_path for n in nodes}
    clocks = {n.store.faketime_file for n in nodes}
    assert len(logs) == len(clocks) == 3
    assert nodes[1].store.log_path.name == "store-node2.log"


def test_faults_find_their_node_by_target(tmp_path):
    a, b = (Node(name, SimpleNamespace(), NodeFiles.of(tmp_path, name, alone=False)) for name in ("node1", "node2"))
    ctx = FaultContext(cfg=None, run_dir=tmp_path, ledger=Ledger(tmp_path), workers=[], holders=None,
                       rng=random.Random(1), nodes=[a, b])
    assert ctx.node is a
    assert ctx.node_for("node2") is b
    assert ctx.node_for("store") is a and ctx.node_for("workers") is a    # today's targets: the first node
    empty = FaultContext(cfg=None, run_dir=tmp_path, ledger=Ledger(tmp_path), workers=[], holders=None,
                         rng=random.Random(1))
    with pytest.raises(LookupError):
        empty.node_for("store")


@pytest.mark.integration
def test_a_run_holds_one_node_with_its_recorders_and_files(tmp_path):
    """A real (short) run in this process, through the proxy: the run's nodes, after it ended."""
    plan = preflight(RunConfig(workers=2, time_limit_s=1.5, results_dir=str(tmp_path / "results"), proxy=True))
    run = Run(plan, log=lambda *a, **k: None)
    run_dir = run.execute()
    [node] = run.nodes
    assert node.name == "node1"
    assert node.files == NodeFiles.of(run_dir, "node1", alone=True)
    for path in (node.files.audit, node.files.clock, node.files.log):
        assert path.is_file() and path.stat().st_size > 0, path
    assert node.files.audit.read_text().endswith("# end\n") and run.audit_complete
    assert node.audit is not None and node.clock is not None and node.admin is not None
    cfg = json.loads((run_dir / "config.json").read_text())
    assert node.proxy.name == f"leasecheck-{cfg['run_id']}"
    assert cfg["client_port"] == node.proxy.listen_port and cfg["store_port"] == node.store.port
    assert node.store.pid is None                      # stopped with the run
    assert not (Path(run_dir) / "faketime").exists()   # no clock fault planned: no timestamp files
