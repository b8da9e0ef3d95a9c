"""Fresh short runs checked twice: by the project's checker and by the one written from
docs/history.md alone (tests/checkers/independent/). They must give the same foreign releases
(each with its victim and whether the victim's job was running), claims seen, overlap and
releases that found nothing — for the built-in leases, the two leases whose release writes the
key, and the hash-field leases; and on runs of several nodes the several-node counts too
(Redlock masters: claims and foreign releases per node, holds, violations; replicated with a
failover: claims followed across it, lost in failover, early losses in failover, split brains)."""
import json
import re
import sys
from collections import Counter
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parents[1] / "checkers"))
from independent.checker import check  # noqa: E402
from independent.compare import project_counts  # noqa: E402

pytestmark = pytest.mark.integration

OWN = "tests/integration/ownership_leases.py"
HASH = "examples/hash_field_lease.py"
NODES = "tests/integration/node_leases.py"
OUTLIVE = ("--job-duration", "1.1s..1.5s")   # every job outlives the default 1 s lease


def counts(res: dict) -> dict:
    return {"foreign": [(f["attempt"], f["victim"], f["line"], f["victim_job_running"])
                        for f in res["foreign_releases_first"]],
            "claims": res["claims_seen"]["count"], "fates": {k: v for k, v in res["claims"].items() if v},
            "objects": res["claims_seen"]["keys"],
            "overlap": res["overlap"]["count"], "found_nothing": res["releases_found_nothing"]}


# The two leases that release by writing or deleting a field by name run with jobs that outlive the
# lease, as the tests of their own below do (they share these runs: `leasecheck_once`), so that
# their foreign releases are compared too; the others with the default jobs.
@pytest.mark.parametrize("lease, jobs", [("naive-del", ()), ("token-cas", ()), ("get-compare-del", ()),
                                         (f"{OWN}:CounterZero", OUTLIVE), (f"{OWN}:GetdelWriteback", ()),
                                         (f"{HASH}:HashFieldCas", ()), (f"{HASH}:HashFieldDel", OUTLIVE)])
def test_both_checkers_give_the_same_counts_on_a_fresh_run(leasecheck_once, lease, jobs):
    r = leasecheck_once("run", "--lease", lease, "--time-limit", "6s", *jobs)
    assert r.code in (0, 1), r.out + r.err
    assert r.results["claims_seen"]["count"] > 0
    assert check(r.run_dir) == counts(r.results)


@pytest.mark.parametrize("lease", ["naive-del", "token-cas", "get-compare-del"])
def test_the_last_progress_line_counts_what_the_history_holds(leasecheck_once, lease):
    # the same runs: the live progress counts acquires and releases from the slot board, overlaps
    # from the job lines; its last line (the output is no terminal) must say what the history says
    r = leasecheck_once("run", "--lease", lease, "--time-limit", "6s")
    last = [line for line in r.out.splitlines() if line.startswith("progress: ")][-1]
    won, lost, unknown = map(int, re.search(r"acquires won (\d+) lost (\d+) unknown (\d+)", last).groups())
    nothing, overlaps = map(int, re.search(r"so far (\d+) release\(s\) found nothing, (\d+) job run", last).groups())
    events = [json.loads(line) for line in (r.run_dir / "history.jsonl").read_text().splitlines()]
    acquires = Counter(e["type"] for e in events if e.get("f") == "acquire" and e["type"] in ("ok", "fail", "info"))
    assert (won, lost, unknown) == (acquires["ok"], acquires["fail"], acquires["info"]) and won > 0
    assert nothing == sum(e["type"] == "ok" and e.get("f") == "release" and e["value"] is False for e in events)
    assert nothing == r.results["releases_found_nothing"] and overlaps == r.results["overlap"]["count"]


def test_a_hash_field_lease_is_judged_on_its_fields(leasecheck_once):
    # HSETNX of the field `holder` (with the hash key's expiry: the bundled Redis 6.2 has no field
    # expiry), released by a compare-and-HDEL script: claims seen, none inconclusive for want of one
    r = leasecheck_once("run", "--lease", f"{HASH}:HashFieldCas", "--time-limit", "6s")
    assert r.code == 0, r.out + r.err
    res = r.results
    assert res["valid"] is True and res["claims_seen"]["count"] > 0
    assert all(x.endswith("[holder]") for x in res["claims_seen"]["examples"])
    assert res["problems"] == [] and res["disagreements"] == []
    # the same claims released by a plain HDEL, given the chance: every job outlives the 1 s lease,
    # so a late HDEL frees another attempt's field, and that is found
    r = leasecheck_once("run", "--lease", f"{HASH}:HashFieldDel", "--time-limit", "6s", *OUTLIVE)
    assert r.code == 1, r.out + r.err
    res = r.results
    assert res["foreign_releases"] > 0 and res["witness"]["key"].endswith("[holder]")
    first = res["foreign_releases_first"]
    assert {f["field"] for f in first} == {"holder"} and all(f["command"] == "HDEL" for f in first)


def test_a_release_that_writes_the_key_counts_only_live_claims_it_freed(leasecheck_once):
    # the counter set back to "0": every foreign release took a live claim from another attempt;
    # the "0" values are nobody's claims, so they are not among the claims seen
    r = leasecheck_once("run", "--lease", f"{OWN}:CounterZero", "--time-limit", "6s", *OUTLIVE)
    res = r.results
    assert r.code == 1 and res["foreign_releases"] > 0, r.out + r.err
    ended = sum(v for k, v in res["claims"].items())
    assert ended == res["claims_seen"]["count"]
    assert res["claims"]["foreign_release"] == res["foreign_releases"]
    first = res["foreign_releases_first"]
    if any(f["victim_job_running"] for f in first):
        lead = next(f for f in first if f["victim_job_running"])
        assert f"attempt {lead['attempt']}'s {lead['command']} ({'audit.log'} line {lead['line']}" in res["reasons"][0]


@pytest.mark.parametrize("args", [
    # the scenarios' stories: node3's clock jumps past the TTL (two holders); the replica promoted
    # without the holder's claim (lost in failover, another attempt wins it)
    ("--scenario", "scenarios/redlock-clock-jump.toml"),
    ("--scenario", "scenarios/failover-loses-claim.toml"),
    # Redlock on 3 masters with the plain lease, and one whose release deletes by key name on each
    # master after jobs that outlive the lease: foreign releases on several nodes
    ("--topology", "redlock", "--nodes", "3", "--lease", "redlock", "--time-limit", "5s"),
    ("--topology", "redlock", "--nodes", "3", "--lease", f"{NODES}:RedlockDel", "--time-limit", "5s", *OUTLIVE),
], ids=["redlock-clock-jump", "failover-loses-claim", "redlock", "redlock-del"])
def test_both_checkers_give_the_same_counts_on_a_fresh_several_node_run(leasecheck, args):
    r = leasecheck("run", *args, timeout=300)
    assert r.code in (0, 1), r.out + r.err
    config = json.loads((r.run_dir / "config.json").read_text())
    assert len(config["store_nodes"]) >= 2
    mine, theirs = check(r.run_dir), project_counts(r.results, config)
    assert mine == theirs
    if config["topology"] == "redlock":
        assert mine["holds"] > 0 and sum(mine["claims_per_node"].values()) > 0
        if "redlock-clock-jump" in args[-1]:
            assert mine["violations"] > 0
        if any("RedlockDel" in a for a in args):
            assert sum(v > 0 for v in mine["foreign_per_node"].values()) >= 2   # on more than one master
    else:
        assert mine["lost_in_failover"] >= 1 and mine["early_loss_failover"] >= 1
