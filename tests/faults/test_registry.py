"""The fault registry is the one list: help, parsing, scenario keys, refusals and undos come from
what each fault module declares."""
from types import SimpleNamespace

import pytest

from leasecheck.harness.errors import UsageError
from leasecheck.harness.faults import FAULTS, Fault, nemesis_entries, nemesis_help
from leasecheck.harness.nemesis.heal import UNDO


def _cfg(**kw):
    return SimpleNamespace(**{"ttl_s": 1.0, "store_url": None, "backend": "embedded", "audit": True, **kw})


def test_every_fault_module_is_found_in_its_order():
    assert list(FAULTS)[:3] == ["pause", "clock", "latency"]
    assert {"partition", "kill", "evict", "oneway"} <= set(FAULTS)


@pytest.mark.parametrize("name", sorted(FAULTS))
def test_each_fault_declares_itself(name):
    f = FAULTS[name]
    assert isinstance(f, Fault) and f.summary and f.targets and f.default_target in f.targets
    assert f.measures, "what stop() returns"
    assert f.undoes and all(kind in UNDO for kind in f.undoes), "each ledger entry it writes has an undo"
    assert all(t in f.targets for t in f.store_targets) and (f.acts or not f.store_targets)
    assert name in nemesis_help()


def test_the_proxy_decision_comes_from_the_registry():
    assert {n for n, f in FAULTS.items() if f.needs_proxy} == {"latency", "partition", "kill", "oneway"}


@pytest.mark.parametrize("spec", ["pause:store", "clock:store", "kill", "evict"])
def test_store_faults_are_refused_on_stores_the_harness_does_not_own(spec):
    with pytest.raises(UsageError, match="drop --store-url"):
        nemesis_entries(spec, _cfg(store_url="redis://127.0.0.1:1/0", store_bin=None))
    with pytest.raises(UsageError, match="--backend compose.*--backend docker"):
        nemesis_entries(spec, _cfg(store_url="redis://127.0.0.1:1/0", backend="compose", store_bin=None))


def test_worker_targets_are_not_refused_on_an_external_store():
    assert nemesis_entries("pause:holder,latency", _cfg(store_url="redis://127.0.0.1:1/0")) == [
        ("pause", "holder", None), ("latency", "workers", None)]
