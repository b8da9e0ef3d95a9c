"""`leasecheck shrink` on runs of several store nodes: a failing `--topology redlock` run (five
masters) and a failing `--topology replicated` run (a primary, a replica, three Sentinels) each
shrink to a smaller scenario of the same topology, which fails again when run.

Each source is a shipped scenario with faults added that it does not need; the shrink (one replay
per candidate, a small budget) finds the shipped faults alone still fail. The redlock run's come
after its violation. The replicated run's comes before the failover: once node2 is promoted,
"replica" can still name it, and a pause there at 5.7 s once kept the other worker from winning
the key on node2 before the holder released it at 6.05 s — the very violation the scenario shows
(CI, 2026-12-07, with the Sentinels switching 2.4 s after the stop).
Before the node settings were kept, every replay ran on one store and the shrink exited 255
("partition:node4: this run's nodes are node1"). Real runs: 75 s (redlock) and 115 s
(replicated, whose Sentinels add ~14 s to every run) measured on a shared 2-core machine."""
import subprocess
import sys
import tomllib

import pytest

from tests.conftest import ROOT

pytestmark = pytest.mark.integration

NODE_KEYS = ("topology", "nodes", "replicas", "sentinels")
# Faults each scenario's violation does not need: the shrink removes them.
EXTRA = {
    "redlock-clock-jump": [("6.5", "partition", "node4", "0.3"), ("6.6", "partition", "node5", "0.3")],
    "failover-loses-claim": [("1.0", "pause", "replica", "0.3")],   # node2, before the cut at 2.5 s
}


def _source(tmp_path, name: str):
    text = (ROOT / "scenarios" / f"{name}.toml").read_text()
    text += "".join(f'\n[[event]]\nat = {at}\nfault = "{fault}"\ntarget = "{target}"\nduration = {d}\n'
                    for at, fault, target, d in EXTRA[name])
    path = tmp_path / f"{name}-padded.toml"
    path.write_text(text)
    return path, tomllib.loads(text)


@pytest.mark.parametrize("name, budget", [("redlock-clock-jump", "65s"), ("failover-loses-claim", "100s")])
def test_a_multi_node_run_shrinks_to_a_smaller_scenario_of_the_same_topology(leasecheck, tmp_path, name, budget):
    path, doc = _source(tmp_path, name)
    source = leasecheck("run", "--scenario", str(path), "--quiet")
    assert source.code == 1, source.out + source.err

    r = leasecheck("shrink", str(source.run_dir), "--budget", budget, "--replays", "1", "--must-fail", "1",
                   timeout=300)
    assert r.code == 0, r.out + r.err
    assert "nodes are node1" not in r.out + r.err and "could not run" not in r.out
    shrunk = tomllib.loads((source.run_dir / "shrunk.toml").read_text())
    assert {k: shrunk["run"].get(k) for k in NODE_KEYS} == {k: doc["run"].get(k) for k in NODE_KEYS}
    assert len(shrunk["event"]) < len(doc["event"]), shrunk

    # run again; a second try when the first passes: these scenarios are timed to ~0.5 s, and a
    # machine loaded past its cores heals a partition late enough to miss the window
    codes = []
    for i in range(2):
        again = subprocess.run([sys.executable, "-m", "leasecheck", "run", "--scenario",
                                str(source.run_dir / "shrunk.toml"), "--quiet",
                                "--results-dir", str(tmp_path / f"again{i}")],
                               capture_output=True, text=True, timeout=120, cwd=ROOT)
        codes.append(again.returncode)
        if again.returncode == 1:
            break
    assert codes[-1] == 1 and set(codes) <= {0, 1}, (codes, again.stdout + again.stderr)
