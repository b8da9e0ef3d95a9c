"""Regression runs for the bugs the reference model found (known-bad / known-good pairs in data/).

- overwrite-near-expiry: an acquire's unconditional `SET key tok PX` (no NX) overwrote another
  attempt's claim 50 ms before its expiry. The checker took the acquire's success as the client's
  proof that the key was absent, overruled the clock, expired the claim and missed the foreign
  release (valid True). Only a conditional create's result says the key was absent.
- renew-shortens-foreign: a renew by plain `PEXPIRE key 30` (no token check) cut another attempt's
  claim short and the store answered 1; the foreign release was found, but the renew's `ok true`
  was also reported as a disagreement ("no extension"), which it is not.
- evicted-info-create: a create with an unknown outcome over a claim an eviction fault may have
  removed was taken as blocked, hiding a foreign release. Its twin `evicted-info-create-ok`
  (written by `eviction_twin` below) is the decided, valid case: the create's success is known
  and the late release compares the token.
"""
from pathlib import Path

import pytest

from leasecheck.checkers import check_run
from test_claims_model import K, Run

CAS = "if redis.call('get', KEYS[1]) == ARGV[1] then\n  return redis.call('del', KEYS[1])\nend\nreturn 0"

DATA = Path(__file__).parent / "data"


def test_overwrite_near_expiry_is_a_foreign_release():
    bad, good = check_run(DATA / "overwrite-near-expiry-bad"), check_run(DATA / "overwrite-near-expiry-ok")
    assert bad["valid"] is False and bad["foreign_releases"] == 1
    assert "w1.s0.0's SET" in bad["reasons"][0] and "w0.s0.0" in bad["reasons"][0]
    assert bad["claims"]["foreign_release"] == 1 and bad["disagreements"] == []
    assert good["valid"] is True and good["foreign_releases"] == 0 and good["disagreements"] == []
    assert good["claims"]["expired_while_held"] == 1 and good["claims"]["released_by_holder"] == 1


def test_renew_shortening_a_foreign_claim_is_no_disagreement():
    bad, good = check_run(DATA / "renew-shortens-foreign-bad"), check_run(DATA / "renew-shortens-foreign-ok")
    assert bad["valid"] is False and bad["foreign_releases"] == 1 and bad["disagreements"] == []
    assert "expiry shortened" in bad["reasons"][0]
    assert good["valid"] is True and good["foreign_releases"] == 0 and good["disagreements"] == []


def test_unknown_create_over_an_evictable_claim_is_not_decided():
    """evicted-info-create: during an eviction fault w0.s0.18's claim was evicted; w1.s0.12's
    `SET NX` (outcome unknown: `info`) then created a claim, which w0.s0.18's late DEL deleted.
    The checker assumed the evictable claim blocked the create and called the DEL a release by
    its holder: a foreign release missed with no uncertainty reported. Now the key is lost track
    of (claim fate `unknown`, verdict reasons say so)."""
    bad = check_run(DATA / "evicted-info-create-bad")
    assert bad["claims"]["unknown"] >= 1 and bad["disagreements"] == []
    assert any("could not be followed" in r for r in bad["reasons"])
    assert any("eviction fault may have removed" in p for p in bad["problems"])


def eviction_twin(create: str, release: str) -> Run:
    """A claims (1 s lease) and starts its job; an eviction fault removes A's claim; B's
    `SET NX` creates a claim (its client saw `create`: "ok" or "info"); A's job ends and A
    releases late (`release`: "cas" compares the token, "del" deletes by name); B releases."""
    run = Run()
    run.events[0]["config"] = {"key_prefix": "lc:", "ttl_ms": 1000, "max_overlap": None,
                               "lease": "token-cas" if release == "cas" else "naive-del",
                               "scenario": f"evicted-{create}-create-{release}"}
    run.call(10, "w0.s0.0", "acquire", "ok", True, ("SET", K, "tokA", "NX", "PX", "1000"))
    run.job(13, "w0.s0.0", "job_start")
    run.line(50, "127.0.0.1:9999", "ECHO", "leasecheck:fault:0:evict:start")
    run.call(100, "w1.s0.0", "acquire", create, True, ("SET", K, "tokB", "NX", "PX", "1000"))
    run.job(104, "w1.s0.0", "job_start")
    run.line(150, "127.0.0.1:9999", "ECHO", "leasecheck:fault:0:evict:end")
    run.job(200, "w0.s0.0", "job_end")
    if release == "cas":
        run.call(201, "w0.s0.0", "release", "ok", False, (("EVAL", CAS, "1", K, "tokA"), [("get", K)]))
    else:
        run.call(201, "w0.s0.0", "release", "ok", True, ("DEL", K))
    run.job(350, "w1.s0.0", "job_end")
    if release == "cas":
        run.call(351, "w1.s0.0", "release", "ok", True,
                 (("EVAL", CAS, "1", K, "tokB"), [("get", K), ("del", K)]))
    else:
        run.call(351, "w1.s0.0", "release", "ok", False, ("DEL", K))
    return run


def test_evicted_info_create_twin_is_decided_without_foreign_release():
    """Decided: nothing foreign. But the store evicted A's claim within its lease and B then ran
    the job — an early loss, the only reason this run fails."""
    ok = check_run(DATA / "evicted-info-create-ok")
    assert ok["valid"] is False and ok["foreign_releases"] == 0 and ok["disagreements"] == []
    assert ok["early_loss"]["by_cause"]["eviction"] == 1 and len(ok["reasons"]) == 1
    assert ok["claims"]["evicted"] == 1 and ok["claims"]["released_by_holder"] == 1
    assert ok["claims"]["unknown"] == 0 and ok["problems"] == []
    assert eviction_twin("ok", "cas").check()["claims"] == ok["claims"]     # the data dir is this run


@pytest.mark.parametrize("create, release, valid, foreign", [
    ("ok", "cas", False, 0),        # the twin: decided, nothing removed (invalid by early loss only)
    ("ok", "del", False, 1),        # B's create is known: A's late DEL removed B's claim, certainly
    ("info", "del", "unknown", 0),  # the -bad shape: whether B's create happened cannot be known
    ("info", "cas", "unknown", 0),  # a CAS release removes nothing, but B's claim cannot be followed
])
def test_an_unknown_create_during_an_eviction_is_undecided_a_known_one_is_decided(create, release, valid, foreign):
    r = eviction_twin(create, release).check()
    assert r["valid"] == valid and r["foreign_releases"] == foreign, r["reasons"]
    if (create, release) == ("ok", "cas"):
        assert len(r["reasons"]) == 1 and "lost before the lease's deadline" in r["reasons"][0]
    assert r["disagreements"] == []
    if create == "info":
        assert any("eviction fault may have removed" in p for p in r["problems"])
