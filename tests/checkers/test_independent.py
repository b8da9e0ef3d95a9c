"""The project's checker against a second one written from docs/history.md alone
(tests/checkers/independent/, which imports nothing of leasecheck): foreign releases (who removed
whose claim, on which audit line, and whether the victim's job was running), claims seen (claims
and objects), overlap and releases that found nothing must be the same on every saved run
directory of the tests — and on a run of several nodes the several-node counts too: per node
its claims (and a replica's copies) and foreign releases, Redlock's holds and mutual-exclusion
violations, a replicated run's claims followed across failovers (lost in failover), early
losses in failover and split brains. `tests/integration/test_independent_runs.py` does the same
on fresh runs."""
import json
from pathlib import Path

import pytest

from leasecheck.checkers import check_run
from independent import compare
from independent.checker import check

TESTS = Path(__file__).parents[1]
DATA = Path(__file__).parent / "data"
# every saved run directory under tests/ (one store, Redlock masters, replicated with failover)
SAVED = sorted(p.parent for p in TESTS.rglob("config.json") if (p.parent / "history.jsonl").exists()
               or (p.parent / "history.d").is_dir())


def project_counts(run_dir) -> dict:
    """The project's counts, in the independent checker's shape (`independent.checker.check`)."""
    r = check_run(run_dir)
    config = json.loads((Path(run_dir) / "config.json").read_text())
    listed = r["foreign_releases"] if config.get("topology") != "redlock" else 0   # redlock: counted, not listed
    assert len(r["foreign_releases_first"]) == listed
    return compare.project_counts(r, config)


def test_every_saved_run_directory_is_compared_several_node_ones_included():
    names = {str(p.relative_to(TESTS)) for p in SAVED}
    assert {p.name for p in DATA.iterdir()} <= {Path(n).name for n in names}
    assert {"checkers/replicated/failover-lost-bad", "checkers/replicated/failover-naive-del-foreign-bad",
            "checkers/replicated/failover-nolag-ok", "checkers/replicated/failover-counter-split-brain-bad",
            "checkers/redlock/clock-jump-bad", "checkers/replicated/killed-mid-failover",
            "harness/data/fuzz-run"} <= names


@pytest.mark.parametrize("run_dir", SAVED, ids=[str(p.relative_to(TESTS)) for p in SAVED])
def test_the_independent_checker_agrees_on_every_saved_run(run_dir):
    assert check(run_dir) == project_counts(run_dir)


def test_the_independent_checker_gives_the_hand_counts():
    # (tests/checkers/test_ownership.py counts these by hand, line by line)
    assert check(DATA / "counter-zero-release-bad")["foreign"] == [("w0.s0.0", "w1.s0.0", 12, False),
                                                                  ("w1.s0.0", "w2.s0.0", 16, True)]
    assert check(DATA / "getdel-writeback-bad")["foreign"] == [("w0.s0.0", "w1.s0.0", 8, True)]
    assert check(DATA / "hash-field-hdel-bad") | {"foreign": None} == {
        "foreign": None, "claims": 4, "objects": 2, "overlap": 2, "found_nothing": 0,
        "fates": {"expired_while_held": 1, "foreign_release": 2, "still_held": 1}}
    assert check(DATA / "incident-plain-del-bad")["foreign"] == [("w0.s0.0", "w1.s0.0", 7, True)]


def test_the_several_node_counts_are_the_stories_the_fixtures_tell():
    rep = TESTS / "checkers" / "replicated"
    # the holder's claim, acknowledged by node1 during the replication cut, never reached node2:
    # lost in the failover, and another attempt then won the key there (an early loss)
    lost = check(rep / "failover-lost-bad")
    assert (lost["lost_in_failover"], lost["early_loss_failover"], lost["foreign"]) == (1, 1, [])
    assert lost["nodes"] == {"node1": (2, 0), "node2": (2, 1)}     # node2: one copy of node1's claims
    # naive-del: the first holder's late DEL reaches the promoted node2 and removes the other's copy
    naive = check(rep / "failover-naive-del-foreign-bad")
    assert [(r, v, node) for r, v, node, _, _ in naive["foreign"]] == [("w0.s0.0", "w1.s0.99", "node2"),
                                                                      ("w1.s0.99", "w0.s0.1", "node2")]
    assert naive["fates"] == {"expired_while_held": 1, "foreign_release": 2}
    # no cut: nothing lost; one claim made on node1 after its stop, never acknowledged (no split brain)
    ok = check(rep / "failover-nolag-ok")
    assert (ok["lost_in_failover"], ok["split_brain"], ok["off_primary"], ok["foreign"]) == (0, 0, 1, [])
    # continued at the heal, node1 still takes writes: a release's "0" over a copy there, then a
    # claim on node1 while another attempt's is live on node2, the primary
    split = check(rep / "failover-counter-split-brain-bad")
    assert (split["split_brain"], split["off_primary"]) == (1, 1)
    assert [(r, v, node) for r, v, node, _, _ in split["foreign"]] == [("w0.s0.0", "w1.s0.102", "node1")]
    # the harness SIGKILLed mid-failover (scenarios/failover-loses-claim.toml): history.d/ merged as
    # it is read, both audits cut short, no fault_end (so no failover to follow claims across)
    killed = check(rep / "killed-mid-failover")
    assert killed["nodes"] == {"node1": (2, 0), "node2": (1, 1)} and killed["lost_in_failover"] == 0
    # Redlock: node3's clock jumps past the TTL; another attempt wins node3-5 while the first holds
    rl = check(TESTS / "checkers" / "redlock" / "clock-jump-bad")
    assert (rl["holds"], rl["violations"], rl["foreign"]) == (3, 1, 0)


@pytest.mark.parametrize("b_wins", [True, False])
def test_the_hand_made_redlock_run_written_as_a_run_directory(tmp_path, b_wins):
    # tests/checkers/test_mutual_exclusion.py's three masters (node2's clock jumps +10 s, so A's
    # key there expires and B wins node2 and node3), saved as a run directory and read by both
    import test_mutual_exclusion as hand
    run = tmp_path / "run"
    run.mkdir()
    (run / "config.json").write_text(json.dumps(hand.CONFIG))
    (run / "history.jsonl").write_text("".join(json.dumps(e) + "\n" for e in hand._history(b_wins)))
    for name, (audit, samples) in hand._nodes(jump_s=10.0 if b_wins else 0.0).items():
        (run / f"audit-{name}.log").write_text(audit.text)
        (run / f"store-clock-{name}.jsonl").write_text("".join(json.dumps(x) + "\n" for x in samples))
    mine = check(run)
    assert mine == project_counts(run)
    assert (mine["holds"], mine["violations"]) == ((2, 1) if b_wins else (1, 0))
    assert mine["claims_per_node"] == ({"node1": 1, "node2": 2, "node3": 1} if b_wins
                                       else {"node1": 1, "node2": 1, "node3": 1})


def test_the_independent_checker_imports_nothing_of_the_project():
    import ast
    for path in (Path(__file__).parent / "independent").glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module or ""] if isinstance(node, ast.ImportFrom) and not node.level else []
            assert not [n for n in names if n.split(".")[0] in ("leasecheck", "checkers", "harness", "workloads")], path


@pytest.mark.parametrize("won_ms, overlap", [(1087, 1), (1089, 0)])
def test_a_second_win_just_inside_or_past_the_first_holds_promise(tmp_path, won_ms, overlap):
    # A (acquire invoked at 100 ms, TTL 1000 ms) never releases: its hold ends at 100 + 1000 − 12
    # (drift: 1 % of the TTL + 2 ms) = 1088 ms; B's win at 1087 ms overlaps it, at 1089 ms it does not
    import test_mutual_exclusion as hand
    ev = [e for e in hand._history(True) if not (e.get("attempt") == "a.s0.0" and e.get("f") == "release")]
    for e in ev:
        if e.get("attempt") == "b.s0.0":
            e["time"] = (won_ms - 5 if e["type"] == "invoke" else won_ms) * hand.MS
    ev.sort(key=lambda e: e["time"])
    run = tmp_path / "run"
    run.mkdir()
    (run / "config.json").write_text(json.dumps(hand.CONFIG))
    (run / "history.jsonl").write_text("".join(json.dumps(dict(e, index=i)) + "\n" for i, e in enumerate(ev)))
    for name, (audit, samples) in hand._nodes(jump_s=10.0).items():
        (run / f"audit-{name}.log").write_text(audit.text)
        (run / f"store-clock-{name}.jsonl").write_text("".join(json.dumps(x) + "\n" for x in samples))
    mine = check(run)
    assert mine == project_counts(run)
    assert (mine["holds"], mine["violations"]) == (2, overlap)
