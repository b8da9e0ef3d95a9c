"""The ownership rules (docs/history.md, "Claims and their owners") on hand-written run directories
(tests/checkers/ownership_fixtures.py), each one's foreign releases counted by hand:

- a value a release call writes into the key (a counter set back to "0", a value written back
  after GETDEL) ends that attempt's claim and is nobody's claim: overwriting or deleting it removes
  no one's claim;
- only a command that removes, overwrites or shortens a *live* claim of another attempt is a
  foreign release; each listed one says whether the victim's job was still running, and the first
  witness is the first whose victim's job was running;
- a field of a hash is a claim of its own, (key, field), followed like a key.
"""
from pathlib import Path

from leasecheck.checkers import check_run

DATA = Path(__file__).parent / "data"


def _pairs(r):
    return [(f["attempt"], f["victim"], f["command"], f["line"], f["victim_job_running"])
            for f in r["foreign_releases_first"]]


def test_counter_set_back_to_zero_counts_only_releases_of_live_claims():
    # By hand (A w0.s0.0, B w1.s0.0, C w2.s0.0, D w3.s0.0; a 1 s lease):
    #   A claims, its claim expires at 1.011 s mid-job; B claims at 1.05 s, its job ends at 1.30 s;
    #   1.50 s A's SET "0" overwrites B's live claim (B's job over)          -> foreign release 1
    #   1.60 s C claims over A's "0" (nobody's claim)                        -> no foreign release
    #   1.90 s B's SET "0" overwrites C's live claim, C still working        -> foreign release 2
    #   2.00 s D claims over B's "0"; 2.35 s D sets its own claim back to "0" -> released by holder
    #   2.50 s C's SET "0" over D's "0": nobody's claim                      -> no foreign release
    # The checker before this rule counted 5 (each "0" was its writer's claim).
    r = check_run(DATA / "counter-zero-release-bad")
    assert r["valid"] is False and r["foreign_releases"] == 2
    assert _pairs(r) == [("w0.s0.0", "w1.s0.0", "SET", 12, False), ("w1.s0.0", "w2.s0.0", "SET", 16, True)]
    assert r["claims"]["foreign_release"] == 2 and r["claims"]["released_by_holder"] == 1
    assert r["claims"]["expired_while_held"] == 1 and r["claims_seen"]["count"] == 4
    # the first witness is the first foreign release whose victim's job was still running: B's, not A's
    assert r["witness"]["summary"].startswith("Attempt w1.s0.0's SET (audit.log line 16) overwritten the claim "
                                              "of attempt w2.s0.0")
    assert "the first such is attempt w1.s0.0's SET (audit.log line 16" in r["reasons"][0]
    assert "1 of a claim whose job was still running" in r["reasons"][0]
    # C's last release wrote "0" over "0": the lease said it released, but it removed nothing
    assert r["disagreements"] == ["w2.s0.0 release reported ok true, but the audit shows it removed nothing"]
    assert r["problems"] == []


def test_getdel_then_write_back_counts_the_getdel_only():
    # By hand: A's claim expires mid-job; B claims at 1.05 s; 1.50 s A's GETDEL takes B's live claim
    # (B still working) -> foreign release 1, and A writes B's value back: nobody's claim, so C's
    # acquire is turned away and B's own GETDEL of that value at 1.85 s removes no one's claim (the
    # checker before counted it: 2). D then claims and releases its own.
    r = check_run(DATA / "getdel-writeback-bad")
    assert r["valid"] is False and r["foreign_releases"] == 1
    assert _pairs(r) == [("w0.s0.0", "w1.s0.0", "GETDEL", 8, True)]
    assert r["claims"]["released_by_holder"] == 1 and r["claims_seen"]["count"] == 3
    assert r["releases_found_nothing"] == 1 and r["releases_found_nothing_outcomes"]["token_differs"] == 1
    assert r["disagreements"] == [] and r["problems"] == []


def test_hash_field_claims_are_followed_like_keys():
    ok, bad = check_run(DATA / "hash-field-cas-ok"), check_run(DATA / "hash-field-hdel-bad")
    # two jobs' fields in one hash: two objects; HSETNX + HPEXPIRE on the field, released by a
    # compare-and-HDEL script: valid, with the late release counted as finding another's claim
    assert ok["valid"] is True and ok["foreign_releases"] == 0
    assert ok["claims_seen"] == {"count": 3, "keys": 2,
                                 "examples": ["lc:t1:leases[lc:t1:job:0]", "lc:t1:leases[lc:t1:job:1]"]}
    assert ok["claims"]["expired_while_held"] == 1 and ok["claims"]["released_by_holder"] == 1
    assert ok["releases_found_nothing_outcomes"]["token_differs"] == 1
    # the same with a plain HDEL: A's late HDEL removes B's live field (B working), then B's own late
    # HDEL removes C's (C done); the other job's field is untouched
    assert bad["valid"] is False and bad["foreign_releases"] == 2
    assert _pairs(bad) == [("w0.s0.0", "w1.s0.0", "HDEL", 12, True), ("w1.s0.0", "w2.s0.1", "HDEL", 16, False)]
    assert {f["field"] for f in bad["foreign_releases_first"]} == {"lc:t1:job:0"}
    assert {f["key"] for f in bad["foreign_releases_first"]} == {"lc:t1:leases"}
    assert bad["claims"]["still_held"] == 1                     # lc:t1:job:1's field
    assert "on lc:t1:leases[lc:t1:job:0]" in bad["reasons"][0]
    assert bad["witness"]["key"] == "lc:t1:leases[lc:t1:job:0]"
    assert ok["problems"] == bad["problems"] == [] and ok["disagreements"] == bad["disagreements"] == []


# -- the finer rules, on run directories written here --------------------------------------------

from ownership_fixtures import Run  # noqa: E402


def _run(tmp_path, build, end=2.6):
    r = Run("case", "case", 3)
    build(r, r.key)
    r.write(tmp_path, end)
    return check_run(tmp_path / "case")


def test_a_renewal_after_its_claim_ended_writes_nobodys_claim(tmp_path):
    # A's claim expires at 1.011 s; A's renewal then writes the key unconditionally (its claim is
    # over: nobody's claim); B's plain SET over that value removes no one's claim
    def build(r, K):
        r.call(0, "w0.s0.0", "acquire", 0.01, 0.012, [(0.011, ["SET", K, "tokA", "NX", "PX", "1000"], [], 1)], True)
        r.job(0, "w0.s0.0", 0.013, 1.5)
        r.call(0, "w0.s0.0", "renew", 1.1, 1.102, [(1.101, ["SET", K, "tokA", "PX", "1000"], [])], True)
        r.call(1, "w1.s0.0", "acquire", 1.2, 1.202, [(1.201, ["SET", K, "tokB", "PX", "1000"], [])], True)
        r.job(1, "w1.s0.0", 1.203, 1.4)
        r.call(1, "w1.s0.0", "release", 1.45, 1.452, [(1.451, ["DEL", K], [])], True)
    res = _run(tmp_path, build)
    assert res["foreign_releases"] == 0 and res["claims_seen"]["count"] == 2
    assert res["claims"]["expired_while_held"] == 1 and res["claims"]["released_by_holder"] == 1


def test_an_own_renewal_while_live_extends_and_an_own_release_write_ends_it(tmp_path):
    # A renews its live claim by writing it (kept, later expiry), then its release writes "free":
    # released by its holder; B's create over "free" is B's claim, and C's late plain DEL of it is
    # a foreign release of a live claim whose job had not ended
    def build(r, K):
        r.call(0, "w0.s0.0", "acquire", 0.01, 0.012, [(0.011, ["SET", K, "tokA", "NX", "PX", "1000"], [], 1)], True)
        r.job(0, "w0.s0.0", 0.013, 1.4)
        r.call(0, "w0.s0.0", "renew", 0.8, 0.802, [(0.801, ["SET", K, "tokA", "XX", "PX", "1000"], [])], True)
        r.call(0, "w0.s0.0", "release", 1.45, 1.452, [(1.451, ["SET", K, "free"], [])], True)
        r.call(1, "w1.s0.0", "acquire", 1.5, 1.502, [(1.501, ["SET", K, "tokB", "XX", "PX", "1000"], [])], True)
        r.job(1, "w1.s0.0", 1.503, 2.3)
        r.call(2, "w2.s0.0", "release", 1.9, 1.902, [(1.901, ["DEL", K], [])], True)
    res = _run(tmp_path, build)
    assert res["claims"]["released_by_holder"] == 1 and res["claims"]["expired_while_held"] == 0
    assert [(f["attempt"], f["victim"], f["victim_job_running"]) for f in res["foreign_releases_first"]] == [
        ("w2.s0.0", "w1.s0.0", True)]
    assert res["disagreements"] == []
