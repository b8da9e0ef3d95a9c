"""The lock-library leases through the command line: each runs, its claims land in the store
under the library's own key (read from the run's audit.log), every command its workers sent is
joined to its call; a --ttl the library cannot keep and a library that is not installed are
each one line and exit 64 before anything starts."""
import json
import re

import pytest

from leasecheck.harness.cli import EXIT_USAGE

pytestmark = pytest.mark.integration

# What the store must show for each lease's claims on the run's job key.
CLAIM_LINE = {
    "python-redis-lock": r'"SET" "lock:{prefix}job:0" "[^"]+" "NX" "EX" "1"$',
    "pottery-redlock": r'"SET" "redlock:{prefix}job:0" "[^"]+" "NX" "PX" "1000"$',
}
RELEASE_LINE = {  # the release script deleting the library's key
    "python-redis-lock": r'\[0 lua\] "del" "lock:{prefix}job:0"$',
    "pottery-redlock": r'\[0 lua\] "del" "redlock:{prefix}job:0"$',
}


@pytest.mark.parametrize("lease", ["python-redis-lock", "pottery-redlock"])
def test_library_lease_runs_and_claims_under_its_own_key(leasecheck, lease):
    r = leasecheck("run", "--lease", lease, "--time-limit", "4", "--workers", "3",
                   "--job-duration", "0.2s")
    assert r.code == 0, r.out + r.err
    res = r.results
    assert res["foreign_releases"] == 0
    assert res["audit"]["complete"] is True
    assert res["problems"] == []
    # The join is exact: no audit line out of step with the history's numbering.
    assert not [d for d in res["disagreements"] if "seq" in d or "audit.log:" in d]
    prefix = re.escape(json.loads((r.run_dir / "config.json").read_text())["key_prefix"])
    audit = (r.run_dir / "audit.log").read_text().splitlines()
    history = [json.loads(l) for l in (r.run_dir / "history.jsonl").read_text().splitlines()]
    won = sum(1 for e in history if e.get("f") == "acquire" and e["type"] == "ok")
    tries = [l for l in audit if re.search(CLAIM_LINE[lease].format(prefix=prefix), l)]
    deletes = [l for l in audit if re.search(RELEASE_LINE[lease].format(prefix=prefix), l)]
    assert won >= 5
    assert len(tries) >= won            # each win is a conditional create of the library's key
    assert len(deletes) >= won // 2     # and most are deleted by their holder's release script
    assert not any(re.search(rf'"{prefix}job:0"', l) for l in audit)  # never the bare job key


def test_python_redis_lock_renew_keeps_long_jobs_exclusive(leasecheck):
    # Every job outlives the 1 s TTL; Lock.extend() every TTL/3 keeps the claim: nobody overlaps,
    # and the audit shows the library's EXPIRE on its own key.
    r = leasecheck("run", "--lease", "python-redis-lock-renew", "--time-limit", "4", "--workers", "3",
                   "--job-duration", "1.5s")
    assert r.code == 0, r.out + r.err
    res = r.results
    assert res["overlap"]["count"] == 0 and res["releases_found_nothing"] == 0
    prefix = json.loads((r.run_dir / "config.json").read_text())["key_prefix"]
    audit = (r.run_dir / "audit.log").read_text()
    assert audit.count(f'[0 lua] "expire" "lock:{prefix}job:0" "1"') >= 6


def test_python_redis_lock_refuses_a_fractional_ttl(leasecheck, tmp_path):
    r = leasecheck("run", "--lease", "python-redis-lock", "--ttl", "1.5s")
    assert r.code == EXIT_USAGE, r.out + r.err
    assert len(r.err.strip().splitlines()) == 1, r.err
    assert "--ttl 1.5s" in r.err and "whole seconds" in r.err and "--ttl 2s" in r.err
    assert not (tmp_path / "results").exists()


@pytest.mark.parametrize("lease,module,package", [
    ("python-redis-lock", "redis_lock", "python-redis-lock"),
    ("pottery-redlock", "pottery", "pottery"),
])
def test_missing_library_names_the_extra(leasecheck, tmp_path, lease, module, package):
    # The interpreter starts with the library unimportable, as when the extra was never installed.
    block = tmp_path / "block"
    block.mkdir()
    (block / "sitecustomize.py").write_text(f"import sys\nsys.modules[{module!r}] = None\n")
    r = leasecheck("run", "--lease", lease, env={"PYTHONPATH": str(block)})
    assert r.code == EXIT_USAGE, r.out + r.err
    assert len(r.err.strip().splitlines()) == 1, r.err
    assert f"--lease {lease} needs the {package} package" in r.err
    assert "pip install -e '.[libs]'" in r.err
    assert "Traceback" not in r.err
    assert not (tmp_path / "results").exists()
