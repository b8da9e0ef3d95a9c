"""Faults against real processes: the acceptance runs of the fault issue."""
import json
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration
ROOT = Path(__file__).resolve().parents[2]
SCENARIOS = ROOT / "scenarios"


def _history(run_dir: Path) -> list[dict]:
    return [json.loads(line) for line in (run_dir / "history.jsonl").read_text().splitlines()]


def test_long_lease_is_safe_without_faults(leasecheck):
    r = leasecheck("run", "--lease", "naive-del", "--ttl", "3s", "--job-duration", "0.5s",
                   "--time-limit", "8")
    assert r.code == 0, r.out + r.err
    assert r.results["foreign_releases"] == 0 and r.results["overlap"]["count"] == 0


def test_short_claims_effects_are_judged_by_their_calls_not_the_clock(leasecheck):
    """Zero-length jobs: each claim lives a few hundred microseconds, less than the store clock's
    samples can place a time (their round trips on a busy machine): an effect between its
    acquire's completion and its release's invocation is live whatever the clock's slack."""
    r = leasecheck("run", "--lease", "token-cas", "--workers", "4", "--job-duration", "0s",
                   "--retry-delay", "0s", "--time-limit", "3")
    assert r.code == 0, r.out + r.err
    stale = r.results["stale_effects"]
    assert stale["measured_by"] == "history" and stale["effects"] > 1000
    assert (stale["without_fence"], stale["undecided"]) == (0, 0)


def test_holder_pause_breaks_naive_del(leasecheck):
    r = leasecheck("run", "--scenario", str(SCENARIOS / "holder-pause.toml"))
    assert r.code == 1, r.out + r.err
    res = r.results
    assert res["foreign_releases"] >= 1
    starts = [e for e in _history(r.run_dir) if e["type"] == "fault_start"]
    ends = [e for e in _history(r.run_dir) if e["type"] == "fault_end"]
    assert [e["fault"] for e in starts] == ["pause", "pause"] and len(ends) == 2
    assert all(3.8 < e["measured"]["paused_s"] < 4.5 for e in ends)
    assert [f["fault"] for f in res["faults"]] == ["pause", "pause"]


def test_holder_pause_token_cas_overlaps_but_never_frees_another_claim(leasecheck):
    """A holder stalled past its deadline is not the store's fault: overlap, but no early loss."""
    r = leasecheck("run", "--scenario", str(SCENARIOS / "holder-pause.toml"), "--lease", "token-cas")
    assert r.code == 0, r.out + r.err
    res = r.results
    assert res["foreign_releases"] == 0
    assert res["overlap"]["count"] >= 1
    assert res["releases_found_nothing"] >= 1
    assert res["early_loss"]["count"] == 0
    assert all(f["took_effect"] is True for f in res["faults"])
    # the paused holder's effect lands after its claim expired, by far more than the clock's slack
    assert res["stale_effects"]["measured_by"] == "history" and res["stale_effects"]["without_fence"] >= 1


def test_nemesis_pause_holder_random_schedule(leasecheck):
    r = leasecheck("run", "--lease", "naive-del", "--ttl", "2s", "--job-duration", "0.5s",
                   "--nemesis", "pause:holder", "--nemesis-interval", "3s", "--time-limit", "9",
                   "--seed", "3")
    assert r.code == 1, r.out + r.err
    schedule = json.loads((r.run_dir / "schedule.json").read_text())
    assert len(schedule) >= 2 and {s["target"] for s in schedule} == {"holder"}


def test_store_clock_jump_expires_claims_early(leasecheck):
    """`token-cas` (the scenario's lease) never frees another's claim, but the store expires
    claims early while their holders work: the lease's promise broken by the store (early loss)
    is the one reason this run fails."""
    r = leasecheck("run", "--scenario", str(SCENARIOS / "store-clock-jump.toml"))
    assert r.code == 1, r.out + r.err
    res = r.results
    assert res["foreign_releases"] == 0
    assert res["overlap"]["count"] >= 1            # claims expired while their holders worked
    assert res["overlap"]["causes"]["clock_jump"] >= 1
    assert res["early_loss"]["by_cause"]["clock_jump"] >= 1
    assert all("lost before the lease's deadline" in x for x in res["reasons"]), res["reasons"]
    assert "Early loss on" in res["witness"]["markdown"]
    assert "clock:store jumps +4.000 s" in res["witness"]["markdown"]
    ends = [e for e in _history(r.run_dir) if e["type"] == "fault_end"]
    assert all(abs(e["measured"]["store_skew_s"] - 4.0) < 0.2 for e in ends)
    assert all(abs(e["measured"]["store_skew_after_heal_s"]) < 0.2 for e in ends)
    # The history clock did not move: times only grow, and nothing jumps by the 4 s offset.
    history = _history(r.run_dir)
    times = [e["time"] for e in history]
    assert times == sorted(times)
    first_out = next(i for i, e in enumerate(history) if e["type"] == "worker_end")
    assert max(b - a for a, b in zip(times[:first_out], times[1:first_out])) < 1e9
    assert (r.run_dir / "faketime" / "store").read_text().strip() in ("+0", "+0.000000")


def test_worker_clock_skew_leaves_history_time_alone(leasecheck, tmp_path):
    # Each worker's clock jumps by a quarter to all of +4 s, so at least 1 s; short jobs keep
    # every worker writing all the time, so a gap of a second in the history could only be a
    # skewed clock leaking into it.
    scenario = tmp_path / "skew.toml"
    scenario.write_text('[run]\nlease = "token-cas"\nworkers = 3\njob_duration = "0.2s"\n'
                        'time_limit = "7s"\n\n[[event]]\nat = "2s"\nfault = "clock"\n'
                        'target = "workers"\noffset = "+4s"\nduration = "3s"\n')
    r = leasecheck("run", "--scenario", str(scenario))
    assert r.code == 0, r.out + r.err
    history = _history(r.run_dir)
    ends = [e for e in history if e["type"] == "fault_end"]
    assert ends and all(len(e["measured"]["offsets_s"]) == 3 for e in ends)
    times = [e["time"] for e in history]
    assert times == sorted(times)
    first_out = next(i for i, e in enumerate(history) if e["type"] == "worker_end")
    assert max(b - a for a, b in zip(times[:first_out], times[1:first_out])) < 1e9
    for f in (r.run_dir / "faketime").glob("w*"):
        if not f.name.endswith(".tmp"):
            assert float(f.read_text()) == 0.0


@pytest.mark.parametrize("lease,walk_ins", [("naive-del", True), ("token-cas", False)])
def test_the_deadline_incident_replayed(leasecheck, lease, walk_ins):
    r = leasecheck("run", "--scenario", str(SCENARIOS / "deadline-incident.toml"), "--lease", lease)
    res = r.results
    if walk_ins:
        assert r.code == 1 and res["walk_ins"] >= 1, r.out
        assert res["overlap"]["causes"]["foreign_release"] >= 1
        assert "third worker walks in" in (r.run_dir / "witness.md").read_text()
    else:
        assert r.code == 0 and res["walk_ins"] == 0 and res["foreign_releases"] == 0, r.out
        assert res["overlap"]["count"] >= 1  # the deadline still lets two workers overlap
        assert res["overlap"]["causes"]["deadline_passed"] >= 1
        assert res["overlap"]["causes"]["foreign_release"] == 0


def test_replay_repeats_config_and_schedule(leasecheck):
    a = leasecheck("run", "--lease", "token-cas", "--nemesis", "pause", "--nemesis-interval", "2s",
                   "--time-limit", "5", "--workers", "3")
    assert a.code == 0, a.out + a.err
    b = leasecheck("run", "--replay", str(a.run_dir))
    assert b.code == 0, b.out + b.err
    old, new = (json.loads((d / "config.json").read_text()) for d in (a.run_dir, b.run_dir))
    for k in ("seed", "lease", "workers", "ttl_s", "time_limit_s"):
        assert old[k] == new[k]
    assert json.loads((a.run_dir / "schedule.json").read_text()) == \
        json.loads((b.run_dir / "schedule.json").read_text())


def test_eviction_removes_claims_silently_and_is_restored(leasecheck):
    r = leasecheck("run", "--scenario", str(SCENARIOS / "store-eviction.toml"))
    res = r.results
    # An evicted claim whose job another attempt then ran within the holder's lease is an early
    # loss: the only failure this run may show.
    assert r.code in (0, 1), r.out + r.err
    assert all("lost before the lease's deadline" in x for x in res["reasons"]) if r.code else True
    assert res["claims"]["evicted"] >= 1 and res["foreign_releases"] == 0
    assert res["disagreements"] == []
    (fault,) = res["faults"]
    assert fault["measured"]["evicted_keys"] > 0
    assert fault["measured"]["restored"] == {"maxmemory": "0", "maxmemory-policy": "noeviction",
                                             "notify-keyspace-events": ""}
    assert not (r.run_dir / "faults-active.json").exists()


def _scenario(tmp_path, text: str) -> str:
    f = tmp_path / "scenario.toml"
    f.write_text(text)
    return str(f)


def test_latency_through_the_proxy_is_what_was_asked(leasecheck, tmp_path):
    s = _scenario(tmp_path, '[run]\nlease = "token-cas"\nworkers = 3\ntime_limit = "6s"\n'
                            '[[event]]\nat = "2s"\nfault = "latency"\nlatency = "200ms"\njitter = "0ms"\n'
                            'duration = "2s"\n')
    r = leasecheck("run", "--scenario", s)
    assert r.code == 0, r.out + r.err
    (fault,) = r.results["faults"]
    assert fault["requested"]["size"] == 200
    assert 180 <= fault["measured"]["probe_rtt_ms"] <= 220          # within 10%
    assert fault["measured"]["after_heal_probe_rtt_ms"] < 20


def test_partition_stalls_traffic_until_healed(leasecheck, tmp_path):
    s = _scenario(tmp_path, '[run]\nlease = "token-cas"\nworkers = 3\ntime_limit = "8s"\n'
                            'client_timeout = "10s"\n'
                            '[[event]]\nat = "2s"\nfault = "partition"\nduration = "3s"\n')
    r = leasecheck("run", "--scenario", s)
    assert r.code == 0, r.out + r.err
    (fault,) = r.results["faults"]
    assert fault["measured"]["probe_answered_during"] is False
    assert fault["measured"]["probe_rtt_after_heal_ms"] is not None
    # Nothing completed while the partition held: calls invoked during it end after it.
    ev = _history(r.run_dir)
    start = (fault["start_s"] + 0.2) * 1e9
    end = (fault["start_s"] + fault["requested"]["duration_s"]) * 1e9
    assert not [e for e in ev if e["type"] in ("ok", "fail") and start < e["time"] < end]
    assert r.results["audit"]["complete"] is True


def test_store_kill_loses_every_claim_and_the_audit_stays_complete(leasecheck, tmp_path):
    # Jobs of 3 s under a 10 s lease: the claim taken at ~3 s is live when the store dies at
    # 4 s; others claim again after the restart at 4.5 s, before its holder finishes at ~6 s.
    s = _scenario(tmp_path, '[run]\nlease = "naive-del"\nttl = "10s"\njob_duration = "3s"\n'
                            'time_limit = "9s"\n'
                            '[[event]]\nat = "4s"\nfault = "kill"\nduration = "0.5s"\n')
    r = leasecheck("run", "--scenario", s)
    res = r.results
    assert res["audit"]["complete"] is True, res["problems"]
    assert res["claims"]["lost_in_restart"] == 1
    (fault,) = res["faults"]
    assert fault["measured"]["keys_after_restart"] == 0 and fault["measured"]["audit_drained"]
    # The holder outlived the restart; its plain DEL then freed whoever claimed next.
    assert res["foreign_releases"] >= 1 and r.code == 1
    assert "# restart" in (r.run_dir / "audit.log").read_text()


def test_worker_clock_skew_is_felt_by_time_time_in_the_lease(leasecheck, tmp_path):
    s = _scenario(tmp_path, '[run]\nworkers = 2\ntime_limit = "6s"\n'
                            '[[event]]\nat = "2s"\nfault = "clock"\ntarget = "workers"\noffset = "+40s"\n'
                            'duration = "2s"\n')
    lease = str(Path(__file__).with_name("wallclock_lease.py")) + ":WallClockLease"
    r = leasecheck("run", "--scenario", s, "--lease", lease)
    assert r.code == 0, r.out + r.err
    from leasecheck.checkers.read.audit import load_audit

    records, complete, _ = load_audit(r.run_dir)
    skews = [float(rec.argv[2].split(":")[0]) - rec.time for rec in records
             if rec.name == "SET" and len(rec.argv) > 2 and ":" in rec.argv[2]]
    offsets = r.results["faults"][0]["measured"]["offsets_s"]
    assert min(offsets.values()) >= 10                      # each worker its own share of +40 s
    assert max(skews) > 9 and min(skews) < 1                # skewed during the fault, not outside


def test_the_fence_turns_away_a_stale_holders_effect(leasecheck):
    # The holder is paused past its deadline; the next claimer writes its effect with a larger
    # fencing token; the resumed holder's late write is stale: a plain sink takes it, the fenced
    # sink does not.
    r = leasecheck("run", "--scenario", str(SCENARIOS / "holder-pause.toml"),
                   "--lease", "token-cas-fenced", "--sink")
    assert r.code == 0, r.out + r.err
    stale = r.results["stale_effects"]
    assert stale["without_fence"] >= 1
    assert stale["with_fence"] < stale["without_fence"]
    assert stale["turned_away_by_fence"] >= 1
    assert "stale effects" in r.out
