"""The checker against the reference model with faults the plain claim loop never produces:
calls with unknown outcome (`info`: the command ran, never ran, or lands late on the connection
the client gave up), reconnects (`ECHO leasecheck:conn:` on a new connection), store restarts
(`# restart`: every key gone, every connection re-made) and evictions (claims vanishing without
a command between the nemesis's `evict:start` / `:end` markers).

Properties, for truthful runs:
- the checker never reports a foreign release the truth does not have;
- it reports every true foreign release, unless the verdict is "unknown" with a reason;
- `lost_in_restart` / `evicted` fates match the truth where the audit or the clients' results
  prove them (without evictions: every fate matches);
- no disagreements;
- an early loss (a claim the store lost before its deadline while another attempt then ran the
  job) is reported only where the truth has the holder's claim evicted or lost in a restart, and
  it is then the only reason a run without true foreign releases is invalid.
"""
import random
from collections import Counter

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from reference_model import STYLES, generate, replay

pytestmark = pytest.mark.slow   # hypothesis searches over generated runs, seconds each: not in the fast subset

SETTINGS = dict(deadline=None, suppress_health_check=[HealthCheck.too_slow])
SEEDS = st.integers(0, 2**40).map(random.Random)
EXPIRED = {"expired_while_held", "expired_after_job"}


def faulty(rng, info=True, restarts=True, evictions=True, **kw):
    params = dict(workers=rng.randint(1, 3), slots=rng.randint(1, 2), keys=rng.randint(1, 2),
                  ttl_ms=rng.choice((50, 120, 300)), release=rng.choice(STYLES + ("mixed",)),
                  renew=rng.random() < 0.3, use_eval=rng.random() < 0.3,
                  p_pause=rng.choice((0.0, 0.3)), p_overwrite=rng.choice((0.0, 0.15)),
                  p_pexpire=rng.choice((0.0, 0.15)), p_gcd_gap=rng.choice((0.0, 0.3)),
                  p_info=rng.choice((0.1, 0.3)) if info else 0.0,
                  restarts=rng.randint(1, 2) if restarts else 0,
                  evictions=rng.randint(1, 2) if evictions else 0)
    return generate(rng, **(params | kw))


def foreign_truth(run):
    return Counter((f.remover, f.victim, f.key, f.how, f.via) for f in run.truth.foreign)


def foreign_checker(sim):
    return Counter((f.remover, f.victim.owner, f.victim.key, f.how, f.command.replace("EVALSHA:", "EVAL:"))
                   for f in sim.foreign)


def unsure(result) -> bool:
    """The reasons include one of the checker's "unknown" reasons (a valid False verdict lists
    them after the violations it did find)."""
    return any(w in r for r in result["reasons"]
               for w in ("could not be followed", "could be hidden", "cannot be trusted"))


# A claim live during an eviction window and then at a restart may have gone either way; the
# checker's fates allow that too (see judge), so the cause may name either store loss.
_LOST_BY = {"eviction": {"evicted"}, "store_restart": {"lost_in_restart", "evicted"}}


def early_losses_are_sound(result, run) -> int:
    """Every early loss the checker names has its holder's claim lost by the store in the truth;
    returns how many it reported."""
    el = result["early_loss"] or {"count": 0, "first": []}
    for loss in el["first"]:
        true = {c.fate for c in run.truth.claims if c.owner == loss["holder"]}
        assert _LOST_BY[loss["cause"]] & true, (loss, true)
    if el["count"]:
        assert result["valid"] is False
        assert any("lost before the lease's deadline" in r for r in result["reasons"])
    return el["count"]


def numbered(claims) -> dict:
    seen, out = Counter(), {}
    for c in claims:
        seen[(c.owner, c.key)] += 1
        out[(c.owner, c.key, seen[(c.owner, c.key)])] = c
    return out


def judge(run, exact_fates: bool):
    result, sim = run.check(), replay(run)
    got, want = foreign_checker(sim), foreign_truth(run)
    assert result["disagreements"] == [], result["disagreements"]
    assert not (got - want), f"foreign releases the truth does not have: {got - want}"
    assert result["foreign_releases"] == len(sim.foreign)
    if got != want:   # a missed one: the verdict must say what it could not decide
        assert result["valid"] is not True and unsure(result), (want - got, result["reasons"])
    elif want:
        assert result["valid"] is False
    # claims, one by one, matched by (owner, key, n-th such claim): audit order = the truth
    # store's order. The checker never invents a claim; it misses one only when it lost track.
    mine_by, true_by = numbered(sim.claims), numbered(run.truth.claims)
    assert set(mine_by) <= set(true_by), set(mine_by) - set(true_by)
    if set(mine_by) != set(true_by):
        assert result["valid"] is not True and unsure(result), set(true_by) - set(mine_by)
    for k, mine in mine_by.items():
        true = true_by[k]
        if exact_fates:
            assert mine.fate == true.fate, (mine, true)
            continue
        if mine.fate == "evicted":                 # proven absent by a client's result
            assert true.fate == "evicted", (mine, true)
        if true.fate == "lost_in_restart":         # the `# restart` line proves it
            assert mine.fate in ("lost_in_restart", "unknown"), (mine, true)
        if mine.fate == "lost_in_restart":
            assert true.fate in ("lost_in_restart", "evicted"), (mine, true)
        if true.fate != "evicted" and mine.fate != "unknown":
            assert mine.fate == true.fate, (mine, true)
    if not run.truth.foreign and not run.truth.token_reuse and not early_losses_are_sound(result, run):
        assert result["safety"]["valid"] in (True, "unknown")
        if result["safety"]["valid"] == "unknown":
            assert result["reasons"]
    return result


@settings(max_examples=120, **SETTINGS)
@given(SEEDS)
def test_unknown_outcomes_reconnects_and_restarts(rng):
    """Everything is in the audit: every fate and every foreign release must match exactly."""
    run = faulty(rng, evictions=False, restarts=rng.random() < 0.6)
    result = judge(run, exact_fates=True)
    if not run.truth.claims:   # nothing ever claimed: nothing to judge
        assert result["valid"] == "unknown"
    else:
        assert result["safety"]["valid"] is (not run.truth.foreign and not run.truth.token_reuse
                                   and not result["early_loss"]["count"])


@settings(max_examples=120, **SETTINGS)
@given(SEEDS)
def test_all_faults_with_evictions(rng):
    judge(faulty(rng), exact_fates=False)


@settings(max_examples=40, **SETTINGS)
@given(SEEDS)
def test_clean_leases_under_faults_are_never_invalid(rng):
    """Fresh tokens, compare-and-delete, conditional creates: no foreign release can happen; the
    store may still break the lease's promise (evictions, restarts), and only that is invalid."""
    run = faulty(rng, release="lua", p_pause=0.0, p_overwrite=0.0, p_pexpire=0.0, p_gcd_gap=0.0)
    assert not run.truth.foreign
    result = judge(run, exact_fates=False)
    assert result["safety"]["valid"] in (True, "unknown") or early_losses_are_sound(result, run)


def test_the_faults_fire():
    """The generator is not vacuous: every kind of fault happens over a fixed set of seeds, as
    do the fates they lead to and late foreign releases."""
    seen, fates = Counter(), Counter()
    for seed in range(60):
        rng = random.Random(seed)
        run = faulty(rng)
        seen.update(run.truth.injected)
        fates.update(c.fate for c in run.truth.claims)
        seen["foreign"] += len(run.truth.foreign)
    for k in ("info_ran", "info_dropped", "info_late", "reconnect", "restart", "evicted", "foreign"):
        assert seen[k], seen
    assert fates["lost_in_restart"] and fates["evicted"], fates
