"""--topology redlock end to end: five embedded masters, each with its own files and audit, the
redlock lease on every node, faults aimed at one node, and the two scenarios whose expected
verdicts are written in their files."""
import json
import re
import socket
from pathlib import Path

import pytest

from leasecheck.checkers.read.audit import parse_audit
from leasecheck.checkers.model.join import join
from leasecheck.checkers.model.nodes import only_node
from leasecheck.checkers.read.ops import pair_ops

pytestmark = pytest.mark.integration
ROOT = Path(__file__).resolve().parents[2]
SCENARIOS = ROOT / "scenarios"
NODES = [f"node{i}" for i in range(1, 6)]


def _history(run_dir: Path) -> list[dict]:
    return [json.loads(line) for line in (run_dir / "history.jsonl").read_text().splitlines()]


def _expected_exit(scenario: Path) -> int:
    m = re.search(r"Expected: exit (\d)", scenario.read_text())
    assert m, f"{scenario} states no expected exit code"
    return int(m.group(1))


def test_a_redlock_run_starts_five_masters_audits_each_and_pauses_one(leasecheck, tmp_path):
    scenario = tmp_path / "pause-node2.toml"
    scenario.write_text('[run]\ntopology = "redlock"\nlease = "redlock"\nworkers = 2\nttl = "1s"\n'
                        'job_duration = "0.2s"\ntime_limit = "3s"\nclient_timeout = "200ms"\nclient_retries = 0\n'
                        '[[event]]\nat = 1\nfault = "pause"\ntarget = "node2"\nduration = 0.6\n')
    r = leasecheck("run", "--scenario", str(scenario))
    assert r.code == 0, r.out + r.err
    d = r.run_dir
    config = json.loads((d / "config.json").read_text())
    assert config["topology"] == "redlock" and config["nodes"] == 5
    assert [n["name"] for n in config["store_nodes"]] == NODES
    assert len({n["port"] for n in config["store_nodes"]}) == 5
    assert not (d / "audit.log").exists()
    for name in NODES:
        audit = (d / f"audit-{name}.log").read_text()
        assert audit.rstrip().endswith("# end")
        assert f"@{name}" in audit and not re.search(r"@node(?!%s\b)\d" % name[4:], audit)
        assert (d / f"store-clock-{name}.jsonl").stat().st_size > 0 and (d / f"store-{name}.log").exists()
    res = r.results
    assert res["audit"]["complete"] is True and set(res["audit"]["nodes"]) == set(NODES)
    assert "store audit complete" in r.out and "mutual exclusion" in r.out
    me = res["mutual_exclusion"]
    assert me["holds"] >= 3 and me["violations"] == 0 and set(me["claims_per_node"]) == set(NODES)
    assert all(me["claims_per_node"][n] >= me["holds"] for n in ("node1", "node3"))
    (fault,) = res["faults"]
    assert fault["fault"] == "pause" and fault["target"] == "node2" and fault["took_effect"] is True
    assert fault["measured"]["processes"] == ["node2"]
    # The summary's line per node: claims there, the fault it received, its audit.
    assert {n: a["claims"] for n, a in res["audit"]["nodes"].items()} == me["claims_per_node"]
    out = " ".join(r.out.split())
    for name in NODES:
        fault = r" pause at 1\.\d s for 0\.\d s," if name == "node2" else ""
        assert re.search(rf"{name} {me['claims_per_node'][name]} claims?,{fault} audit complete", out), name
    # Every command of a lease call went to the node its connection names.
    acquires = [e for e in _history(d) if e.get("f") == "acquire" and e["type"] in ("ok", "fail")]
    assert acquires and all(s[0].split("@")[1] in NODES for e in acquires for s in e["sent"])


def test_a_killed_node_restarts_empty_and_every_node_is_gone_after_the_run(leasecheck, tmp_path):
    scenario = tmp_path / "kill-node2.toml"
    scenario.write_text('[run]\ntopology = "redlock"\nnodes = 3\nlease = "redlock"\nworkers = 2\nttl = "1s"\n'
                        'job_duration = "0.2s"\ntime_limit = "3s"\nclient_timeout = "200ms"\nclient_retries = 0\n'
                        '[[event]]\nat = 1\nfault = "kill"\ntarget = "node2"\nduration = 0.5\n')
    r = leasecheck("run", "--scenario", str(scenario))
    assert r.code == 0, r.out + r.err
    res = r.results
    (kill,) = res["faults"]
    assert kill["target"] == "node2" and kill["took_effect"] is True
    assert kill["measured"]["keys_after_restart"] == 0
    assert kill["measured"]["run_id_before"] != kill["measured"]["run_id_after"]
    assert "# restart" in (r.run_dir / "audit-node2.log").read_text()
    assert "# restart" not in (r.run_dir / "audit-node1.log").read_text()
    assert res["audit"]["complete"] is True and res["mutual_exclusion"]["violations"] == 0
    for node in json.loads((r.run_dir / "config.json").read_text())["store_nodes"]:
        with pytest.raises(OSError):
            socket.create_connection(("127.0.0.1", node["port"]), timeout=1).close()


def test_redlock_clock_jump_gives_two_clients_the_lock(leasecheck):
    scenario = SCENARIOS / "redlock-clock-jump.toml"
    r = leasecheck("run", "--scenario", str(scenario))
    assert r.code == _expected_exit(scenario) == 1, r.out + r.err
    res = r.results
    me = res["mutual_exclusion"]
    assert me["violations"] >= 1
    assert res["reasons"][0].startswith("mutual exclusion violated") and "both on node3" in res["reasons"][0]
    (lost,) = me["first"]["lost"]          # the holder lost its majority where the clock jumped
    assert lost["node"] == "node3" and lost["fate"] == "expired" and lost["faults"].startswith("clock +10 s")
    md = res["witness"]["markdown"]
    rows = {line.split(" | ")[0].strip("| "): line for line in md.splitlines() if line.startswith("| node")}
    assert set(rows) == {"node", *NODES}
    assert "clock +10 s" in rows["node3"] and "expired by" in rows["node3"]
    assert "partition" in rows["node4"] and "partition" in rows["node5"]
    clock = next(f for f in res["faults"] if f["fault"] == "clock")
    assert clock["target"] == "node3" and clock["took_effect"] is True
    assert abs(clock["measured"]["store_skew_s"] - 10.0) < 0.2
    assert (r.run_dir / "faketime" / "store-node3").read_text().strip() in ("+0", "+0.000000")


def test_redlock_control_holder_pauses_shorter_than_the_validity_are_safe(leasecheck):
    scenario = SCENARIOS / "redlock-holder-pause.toml"
    r = leasecheck("run", "--scenario", str(scenario))
    assert r.code == _expected_exit(scenario) == 0, r.out + r.err
    res = r.results
    assert res["mutual_exclusion"]["violations"] == 0 and res["mutual_exclusion"]["holds"] >= 3
    assert [f["took_effect"] for f in res["faults"]] == [True, True]
    assert res["reasons"][0].startswith("mutual exclusion held")


def test_pottery_on_five_masters_is_judged_with_every_command_credited_to_its_call(leasecheck):
    """pottery returns once a majority answered; the other masters' commands go out after the
    call returned. Each is recorded as late_sent of its call and joined to it on its node, so
    the complete audits hold no command without a call."""
    scenario = SCENARIOS / "redlock-holder-pause.toml"
    r = leasecheck("run", "--scenario", str(scenario), "--lease", "pottery-redlock-n")
    assert r.code == 0, r.out + r.err
    res = r.results
    assert res["audit"]["complete"] is True and set(res["audit"]["nodes"]) == set(NODES)
    assert res["disagreements"] == [] and res["problems"] == []
    assert res["mutual_exclusion"]["violations"] == 0 and res["mutual_exclusion"]["holds"] >= 3
    assert all(res["mutual_exclusion"]["claims_per_node"][n] >= 1 for n in NODES)
    events = _history(r.run_dir)
    calls = {(e["attempt"], e["f"], e["time"]) for e in events if e["type"] == "invoke"}
    late = [e for e in events if e["type"] == "late_sent"]
    assert all((e["attempt"], e["f"], e["invoked"]) in calls for e in late)
    assert all(e["f"] in ("acquire", "release") and e["sent"][0][0].split("@")[1] in NODES for e in late)
    # Checked here by pottery's uuid (the checker never compares tokens): every command carrying
    # an attempt's uuid is joined to that attempt, and every SET to an acquire.
    config = json.loads((r.run_dir / "config.json").read_text())
    for node in NODES:
        ops, _ = pair_ops(only_node(events, node))
        records, complete, _ = parse_audit((r.run_dir / f"audit-{node}.log").read_text())
        joined = join(records, ops, complete)
        f_of = {op.index: op.f for op in ops}
        writer = {}
        for rec, attempt, op in zip(records, joined.attempt, joined.op):
            if rec.kind != "cmd" or rec.name not in ("SET", "EVALSHA"):
                continue
            token = rec.argv[2] if rec.name == "SET" else rec.argv[-1]
            writer.setdefault(token, attempt)
            assert attempt is not None and writer[token] == attempt, (node, rec.line, attempt)
            assert rec.name != "SET" or f_of[op] == "acquire", (node, rec.line, f_of[op])
    assert config["store_nodes"] and len(config["store_nodes"]) == 5


def test_pottery_on_five_masters_is_broken_by_the_clock_jump_too(leasecheck):
    """pottery implements the published algorithm with its drift allowance: a master whose clock
    jumps past the TTL lets a second client win a majority while the first holds the lock."""
    scenario = SCENARIOS / "redlock-clock-jump.toml"
    r = leasecheck("run", "--scenario", str(scenario), "--lease", "pottery-redlock-n")
    assert r.code == 1, r.out + r.err
    res = r.results
    assert res["mutual_exclusion"]["violations"] >= 1 and "both on node3" in res["reasons"][0]
    (lost,) = res["mutual_exclusion"]["first"]["lost"]
    assert lost["node"] == "node3" and lost["fate"] == "expired"
    assert res["disagreements"] == []


def test_redlock_without_audits_is_inconclusive_and_says_why(leasecheck):
    r = leasecheck("run", "--topology", "redlock", "--nodes", "3", "--lease", "redlock", "--no-audit",
                   "--workers", "2", "--ttl", "1s", "--job-duration", "0.1s", "--time-limit", "1s")
    assert r.code == 2, r.out + r.err
    assert r.results["valid"] == "unknown" and r.results["audit"]["present"] is False
    assert r.results["reasons"][0].startswith("recorded with --no-audit: the claims on each of the 3 masters")
    assert "INCONCLUSIVE recorded with --no-audit" in r.out
    assert not list(r.run_dir.glob("audit*.log"))


def test_jobs_longer_than_the_ttl_are_judged_by_each_nodes_reply_to_every_set(leasecheck):
    """Workers retry every few ms while long jobs outlive their claims, so creates land within a
    millisecond of an expiry on some node; each SET's recorded reply says what that node did, and
    the run of a correct lock is valid, its replies agreeing with every node's audit."""
    r = leasecheck("run", "--topology", "redlock", "--nodes", "3", "--lease", "redlock", "--workers", "3",
                   "--time-limit", "3s", "--job-duration", "50%:0.4s,50%:1.6s", "--seed", "2")
    assert r.code == 0, r.out + r.err
    sets = [s for e in _history(r.run_dir) for s in e.get("sent") or [] if s[2] == "SET"]
    assert sets and all(len(s) == 4 and s[3] in (0, 1) for s in sets)
    assert {s[3] for s in sets} == {0, 1}
    res = r.results
    assert res["foreign_releases"] == 0 and res["disagreements"] == [] and res["problems"] == []
