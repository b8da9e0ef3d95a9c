"""A brute-force oracle (`brute_oracle`, written apart from `leasecheck.checkers.model.claims`) replays small runs
step by step; the checker must agree with it, and with the reference model, on every claim's fate
and every foreign release.

Two sources of small runs: arbitrary sequences of up to 8 single-command lease calls (acquires
with and without NX, plain DEL, compare-and-delete, PEXPIRE, compare-and-pexpire, GET-compare-DEL,
by attempts that may share a token, on two keys, at gaps around the TTL), answered truthfully by
the model's store; and claim-loop runs of the reference model cut to a few attempts.
"""
import random
from collections import Counter

import pytest
from hypothesis import given, settings, strategies as st

from brute_oracle import oracle
from reference_model import KINDS, PREFIX, arbitrary, checker_fates, checker_foreign, generate, random_params, replay

pytestmark = pytest.mark.slow   # hypothesis searches checked by a brute-force oracle, seconds each: not in the fast subset


def three_way(run):
    fates, foreign = oracle(run.history(), run.audit_text(), run.samples, PREFIX)
    sim = replay(run)
    truth = run.truth
    assert fates == truth.fates, "the oracle and the model disagree (test bug)"
    assert foreign == Counter((f.remover, f.victim, f.key, f.how) for f in truth.foreign)
    assert checker_fates(sim) == fates
    collapsed = Counter()   # (remover, victim, key, how): summed, two entries may share it
    for k, n in checker_foreign(sim).items():
        collapsed[k[:4]] += n
    assert collapsed == foreign
    result = run.check()
    assert result["foreign_releases"] == sum(foreign.values())
    assert result["disagreements"] == [] and result["problems"] == []
    early = result["early_loss"]["count"]
    for loss in result["early_loss"]["first"]:
        # These runs have no clock jumps, evictions or restarts: a claim lost before its deadline
        # can only be one its lease wrote with an expiry shorter than the TTL (a SET ... PX of a
        # few ms), or one whose holder's renewal (a PEXPIRE by key name) returned success after it
        # had expired, extending another's claim; and the holder must really have had a claim
        # that expired.
        assert loss["cause"] in ("short_expiry", "renewal_missed"), loss
        assert any(c.owner == loss["holder"] and c.fate.startswith("expired")
                   for c in truth.claims), (loss, truth.claims)
    if not truth.fates:   # no claim ever made: nothing to judge, never valid
        assert result["valid"] == "unknown" and result["claims_seen"]["count"] == 0
    else:
        assert result["safety"]["valid"] is (not foreign and not truth.token_reuse and not early)
    return result


STEP = st.tuples(st.integers(0, 3),                       # attempt w0..w3 (w3 shares w0's token)
                 st.sampled_from(KINDS),
                 st.integers(0, 1),                       # key
                 st.sampled_from((10, 500, 30_000, 99_990, 100_000, 100_010, 150_000, 400_000)),  # gap, us
                 st.sampled_from((0, 0, 1, 30, 99, 100, 101, 250)))  # ms (0: the TTL, 100 ms)


@settings(max_examples=400, deadline=None)
@given(st.lists(STEP, min_size=1, max_size=8), st.booleans())
def test_arbitrary_small_runs(steps, jobs):
    three_way(arbitrary(steps, jobs=jobs))


@settings(max_examples=120, deadline=None)
@given(st.integers(0, 2**40))
def test_small_claim_loop_runs(seed):
    rng = random.Random(seed)
    run = generate(rng, **random_params(rng, small=True))
    three_way(run)


def test_oracle_sees_the_incident_timeline():
    """A: claims, its job outlasts the TTL; B claims; A's DEL frees B's claim; C claims."""
    run = arbitrary([(0, "acquire", 0, 10, 0), (1, "acquire", 0, 150_000, 0),
                     (0, "del", 0, 30_000, 0), (2, "acquire", 0, 500, 0), (1, "cas_del", 0, 30_000, 0)])
    result = three_way(run)
    assert result["foreign_releases"] == 1 and result["walk_ins"] == 1
    assert run.truth.fates[("w0.s0.0", PREFIX + "job:0", "expired_while_held")] == 1


def test_an_expiry_set_to_the_same_time_is_not_shortened():
    """Found by Hypothesis: another attempt's PEXPIRE lands exactly on the claim's own expiry
    (401.53 ms + 250 = 551.53 ms + 100); float rounding once made that an "expiry shortened"
    foreign release."""
    three_way(arbitrary([(0, "acquire", 0, 500, 0), (0, "acquire", 0, 500, 0), (0, "acquire", 0, 150000, 0),
                         (0, "acquire", 0, 150000, 0), (1, "acquire", 0, 500, 0), (0, "acquire", 1, 100010, 250),
                         (1, "pexpire", 1, 150000, 0)], jobs=False))
