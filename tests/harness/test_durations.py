import random

import pytest

from leasecheck.harness.settings.durations import parse_distribution, parse_duration
from leasecheck.harness.errors import UsageError


@pytest.mark.parametrize("text,seconds", [("400ms", 0.4), ("1.6s", 1.6), ("2m", 120), ("3", 3.0),
                                          ("250us", 0.00025), (".5s", 0.5)])
def test_parse_duration(text, seconds):
    assert parse_duration(text) == pytest.approx(seconds)


@pytest.mark.parametrize("bad", ["", "fast", "-1s", "1d", "1.6 seconds"])
def test_bad_duration_names_the_fix(bad):
    with pytest.raises(UsageError, match="400ms"):
        parse_duration(bad)


def test_default_mixture_matches_the_incident_scaled_down():
    d = parse_distribution("90%:0.4s,10%:1.6s")
    rng = random.Random(1)
    draws = [d.sample(rng) for _ in range(20000)]
    assert set(draws) == {0.4, 1.6}
    assert draws.count(1.6) / len(draws) == pytest.approx(0.10, abs=0.01)
    assert d.max_s == 1.6


def test_uniform_exponential_and_shared_weights():
    rng = random.Random(2)
    u = parse_distribution("0.2s..0.6s")
    assert all(0.2 <= u.sample(rng) <= 0.6 for _ in range(1000))
    e = parse_distribution("exp:100ms")
    mean = sum(e.sample(rng) for _ in range(20000)) / 20000
    assert mean == pytest.approx(0.1, rel=0.05)
    mix = parse_distribution("50%:1s,2s,3s")  # the two unweighted parts share the other 50%
    draws = [mix.sample(rng) for _ in range(20000)]
    assert draws.count(2.0) / len(draws) == pytest.approx(0.25, abs=0.02)


def test_same_seed_same_draws():
    d = parse_distribution("90%:0.4s,10%:0.2s..3s")
    a = [d.sample(random.Random(7)) for _ in range(3)]
    b = [d.sample(random.Random(7)) for _ in range(3)]
    assert a == b


@pytest.mark.parametrize("bad,why", [("60%:1s,60%:2s", "add up"), ("50%:1s", "add up"),
                                     ("2s..1s", "backwards"), ("x%:1s", "percentage"), ("1s,,2s", "empty")])
def test_bad_distribution(bad, why):
    with pytest.raises(UsageError, match=why):
        parse_distribution(bad)


@pytest.mark.parametrize("text,block", [("90%:0.4s,10%:1.6s", 10), ("75%:0.4s,25%:2s", 4), ("50%:1s,2s,3s", 4),
                                        ("1s,2s,3s", 3), ("33%:1s,67%:2s", 100), ("0.4s", 0), ("0.2s..0.6s", 0),
                                        ("12.345%:1s,2s", 0)])
def test_a_mixtures_block_is_the_fewest_jobs_its_weights_divide(text, block):
    assert parse_distribution(text).block == block


def test_every_block_of_the_runs_jobs_has_each_parts_exact_share():
    d = parse_distribution("80%:0.4s,10%:1.6s,10%:0.2s..0.3s")
    draws = d.job_draws(seed=3)           # no run-wide numbers: the slot numbers its own jobs
    rng = random.Random(0)
    got = [draws(rng) for _ in range(1000)]
    for b in range(100):
        block = got[10 * b:10 * b + 10]
        assert block.count(0.4) == 8 and block.count(1.6) == 1
        assert sum(0.2 <= x <= 0.3 for x in block) == 1
    # the long job's place in its block moves from block to block (a shuffle, not a pattern)
    assert len({[round(x, 1) for x in got[10 * b:10 * b + 10]].index(1.6) for b in range(100)}) >= 8


def test_the_runs_nth_job_takes_the_part_the_seed_gives_it_whoever_runs_it():
    """Two slots sharing one count: job n's part is the seed's, in whatever order the slots take
    numbers; independent draws (no block) stay ``sample``."""
    d = parse_distribution("90%:0.4s,10%:1.6s")
    alone = d.job_draws(seed=9)
    expected = [alone(random.Random(0)) for _ in range(50)]
    count = iter(range(50))
    a, b = d.job_draws(9, count.__next__), d.job_draws(9, count.__next__)
    order = random.Random(1)
    got = [(a if order.random() < 0.5 else b)(random.Random(0)) for _ in range(50)]
    assert got == expected
    assert expected.count(1.6) == 5
    assert d.job_draws(10)(random.Random(0)) is not None
    one = parse_distribution("0.4s")
    assert one.job_draws(9) == one.sample
