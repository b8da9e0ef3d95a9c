"""A replicated run whose replicas hold copies is judged in one pass over the history: each node
is measured twice in that pass (its copies without owners, and with the owners `_Shared.owner`
names from the creates the other models made so far), and the second measure is kept when every
copy's owner is the one `CopyOwners` names from all the first measures — the counts the two
passes of the documented rule give. A guess that does not hold is caught, and that node is
measured once more (the same counts)."""
import json
from pathlib import Path

import pytest

from leasecheck.checkers import check, check_run
from leasecheck.checkers.model import nodes as nodes_mod
from tests.checkers.test_replica_copies import CONFIG, _history, _nodes

RUNS = Path(__file__).parent / "replicated"
SAVED = sorted(p.name for p in RUNS.iterdir() if p.is_dir())


def _second_passes(monkeypatch) -> list[set]:
    """The nodes each second pass over the history measured (a `NodeFeed` given owners)."""
    passes, real = [], nodes_mod.NodeFeed

    class Counted(real):
        def __init__(self, *args, copy_owner=None, only=None, **kw):
            if copy_owner is not None:
                passes.append(set(only or ()))
            super().__init__(*args, copy_owner=copy_owner, only=only, **kw)
    monkeypatch.setattr(nodes_mod, "NodeFeed", Counted)
    return passes


def _two_passes(monkeypatch) -> None:
    """The rule as the documentation states it: first measures, then owners, then a second pass."""
    monkeypatch.setattr(nodes_mod, "owners_agree", lambda n, owners: False)


def _copies(r: dict) -> int:
    return sum(n.get("copies") or 0 for n in r["audit"]["nodes"].values())


@pytest.mark.parametrize("name", SAVED)
def test_a_saved_replicated_run_is_judged_in_one_pass_with_the_counts_of_two(name, monkeypatch):
    passes = _second_passes(monkeypatch)
    one = check_run(RUNS / name)
    assert passes == [] and _copies(one) >= 1, (passes, one["audit"])
    _two_passes(monkeypatch)
    two = check_run(RUNS / name)
    assert passes and passes[0] == {n for n, v in two["audit"]["nodes"].items() if v["copies"]}
    assert json.dumps(one, sort_keys=True) == json.dumps(two, sort_keys=True)


def test_a_hand_made_run_whose_copy_decides_a_foreign_release_needs_no_second_pass(monkeypatch):
    passes = _second_passes(monkeypatch)
    one = check(_history(), None, CONFIG, nodes=_nodes())
    assert passes == [] and one["foreign_releases"] == 1 and one["audit"]["nodes"]["node2"]["copies"] == 2
    _two_passes(monkeypatch)
    assert check(_history(), None, CONFIG, nodes=_nodes()) == one and passes == [{"node2"}]


def test_a_wrong_guess_is_caught_and_that_node_measured_again(monkeypatch):
    """Guessed owners that are not the rule's (every copy nobody's): the check sees it, measures
    the node once more with the rule's owners, and reports what the rule gives."""
    right = check(_history(), None, CONFIG, nodes=_nodes())
    passes = _second_passes(monkeypatch)
    monkeypatch.setattr(nodes_mod._Shared, "owner", lambda self, me, db, key, token, at_ns: None)
    assert check(_history(), None, CONFIG, nodes=_nodes()) == right and passes == [{"node2"}]
    assert right["foreign_releases"] == 1     # the copy's owner decides it: a guess of None would miss it


def test_the_owner_asked_waits_for_every_first_model_to_pass_the_copy(monkeypatch):
    """However the threads run (here: every first model slowed down), each copy's owner is asked
    once every node's first model has read past it — so the guess holds and no second pass is
    needed."""
    passes = _second_passes(monkeypatch)
    real = nodes_mod._Watched.__iter__

    def slow(self):
        import time
        for rec in real(self):
            time.sleep(0.002)
            yield rec
    monkeypatch.setattr(nodes_mod._Watched, "__iter__", slow)
    r = check(_history(), None, CONFIG, nodes=_nodes())
    assert passes == [] and r["foreign_releases"] == 1
