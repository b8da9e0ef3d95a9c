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
