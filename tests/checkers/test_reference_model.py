"""The checker against a reference model that generates runs and knows their ground truth.

For every generated run (random workers, slots, keys, TTLs, job durations, store-clock offsets,
release styles, renewals, and injected violations of every kind), `leasecheck.checkers.check` must report
exactly the model's foreign releases (count, and remover / victim / key / how / command, via
`leasecheck.checkers.model.claims.simulate`), the model's claim fates, `releases_found_nothing`, the overlap's
`max_concurrency` and `count`, token reuse, walk-ins, no disagreement and no problem (the model
is truthful and its audit complete), and `valid` False exactly when a foreign release or a reused
token was injected.
"""
import random
from collections import Counter

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from reference_model import STYLES, differences, generate, random_params

pytestmark = pytest.mark.slow   # hypothesis searches over generated runs, seconds each: not in the fast subset

SETTINGS = dict(deadline=None, suppress_health_check=[HealthCheck.too_slow])
SEEDS = st.integers(0, 2**40).map(random.Random)   # the model draws everything from one seed


def agree(run):
    diff = differences(run)
    assert diff == [], "\n".join(diff)
    return run


@settings(max_examples=250, **SETTINGS)
@given(SEEDS)
def test_checker_reports_exactly_the_models_truth(rng):
    run = agree(generate(rng, **random_params(rng)))
    result = run.check()
    assert result["safety"]["valid"] is (not run.truth.foreign and not run.truth.token_reuse)
    assert result["kept_alive"]["commands"] == run.truth.kept_alive
    if result["valid"] is False and result["safety"]["valid"] is False:
        assert result["reasons"] and result["witness"] is not None or run.truth.token_reuse


@settings(max_examples=60, **SETTINGS)
@given(SEEDS, st.sampled_from(STYLES), st.booleans())
def test_clean_runs_are_valid(rng, style, renew):
    """Fresh tokens, conditional creates, no pause: nothing foreign, whatever the timing."""
    run = agree(generate(rng, workers=rng.randint(1, 3), slots=rng.randint(1, 2), keys=rng.randint(1, 2),
                         ttl_ms=rng.choice((50, 300, 1000)), release=style, renew=renew))
    assert run.truth.foreign == [] and run.check()["valid"] is True


@settings(max_examples=40, **SETTINGS)
@given(SEEDS)
def test_stale_plain_del(rng):
    """The incident: a job stretched past its TTL, then a DEL by name frees the next holder's claim."""
    agree(generate(rng, workers=rng.randint(2, 3), keys=1, ttl_ms=rng.choice((50, 200)), release="del",
                   p_pause=0.5))


@settings(max_examples=40, **SETTINGS)
@given(SEEDS)
def test_fixed_token_compare_and_delete(rng):
    """Equal tokens, different attempts: the late compare-and-delete matches somebody else."""
    run = agree(generate(rng, workers=rng.randint(1, 2), slots=2, keys=1, ttl_ms=100, release="lua",
                         fixed_token=True, p_pause=0.6, use_eval=rng.random() < 0.5))
    assert run.check()["valid"] is (not run.truth.token_reuse and not run.truth.foreign)


@settings(max_examples=40, **SETTINGS)
@given(SEEDS)
def test_overwrite_and_pexpire_shortening(rng):
    agree(generate(rng, workers=3, keys=rng.randint(1, 2), ttl_ms=rng.choice((50, 300)),
                   release=rng.choice(STYLES), p_overwrite=0.3, p_pexpire=0.3))


@settings(max_examples=40, **SETTINGS)
@given(SEEDS)
def test_get_compare_del_gap(rng):
    agree(generate(rng, workers=rng.randint(2, 3), keys=1, ttl_ms=100, release="gcd", p_gcd_gap=0.6))


def test_every_injection_produces_its_violation():
    """The generator is not vacuous: over a fixed set of seeds each kind of foreign release the
    issue names occurs (and then the checker reports it: `differences` is empty)."""
    seen = Counter()
    for seed in range(150):
        rng = random.Random(seed)
        params = random_params(rng)
        run = generate(rng, **params)
        for f in run.truth.foreign:
            seen[(f.how, f.via, params["fixed_token"] and f.via == "EVAL: del")] += 1
        seen["token reuse"] += bool(run.truth.token_reuse)
        seen["found nothing"] += bool(run.truth.found_nothing)
        seen["overlap 3+"] += run.truth.max_concurrency >= 3
    assert seen[("deleted", "DEL", False)], seen            # stale plain DEL
    assert seen[("deleted", "EVAL: del", True)], seen       # equal tokens, different attempts
    assert seen[("overwritten", "SET", False)], seen        # overwriting SET
    assert seen[("expiry shortened", "PEXPIRE", False)], seen
    assert seen["token reuse"] and seen["found nothing"] and seen["overlap 3+"], seen
