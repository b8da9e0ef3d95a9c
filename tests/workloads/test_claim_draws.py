"""A claim loop's draws are fixed by the seed: the k-th attempt's key is the k-th
``randrange(len(keys))`` of the slot's own key stream, however many acquires failed in between
(a scenario replayed with its seed claims the same keys in the same order), whether the loop
draws it through ``randrange`` or with the fewer calls of ``claim_loop._below``."""
import random
import threading
from types import SimpleNamespace

import pytest

from leasecheck.harness.record.connection import SendTracker
from leasecheck.harness.settings.durations import parse_distribution
from leasecheck.workloads import claim_loop
from leasecheck.workloads.claim_loop import Slot, _below


@pytest.mark.parametrize("n", [1, 2, 3, 7, 64, 100, 1000, 2**20 + 1])
def test_below_draws_what_randrange_draws(n):
    ours, theirs = random.Random(f"42:{n}"), random.Random(f"42:{n}")
    assert [_below(ours.getrandbits, n) for _ in range(500)] == [theirs.randrange(n) for _ in range(500)]


def test_this_python_draws_keys_the_short_way():
    assert claim_loop._SAME_DRAWS


def _keys_claimed(attempts: int, keys: list[str], wins_every: int) -> list[str]:
    events, stop = [], threading.Event()

    def record(process, type, **fields):
        events.append((type, fields.get("f"), fields.get("key")))
        if sum(t == "invoke" and f == "acquire" for t, f, _ in events) >= attempts:
            stop.set()
        return len(events)

    tried = []

    class Lease:      # wins one acquire in ``wins_every``: then a job (of no time) and a release
        def __init__(self, client, key, ttl_ms):
            tried.append(key)

        def acquire(self):
            return len(tried) % wins_every == 0

        def release(self):
            return True

    history = SimpleNamespace(record=record, now=lambda: 0)
    zero = parse_distribution("0s")
    Slot(process="w0.s0", history=history, tracker=SendTracker("w0.s0"), client=None, lease_factory=Lease,
         keys=keys, ttl_ms=1000, job_duration=zero, retry_delay=parse_distribution("0s..0.000001s"), seed=5,
         deadline_ns=10**18, stop=stop).run()
    return [key for t, f, key in events if t == "invoke" and f == "acquire"]


@pytest.mark.parametrize("count", [1, 5, 64])
@pytest.mark.parametrize("short_way", [True, False])
def test_the_kth_attempt_claims_the_seeds_kth_key(count, short_way, monkeypatch):
    monkeypatch.setattr(claim_loop, "_SAME_DRAWS", short_way)   # False: where randrange is called
    keys = [f"job:{i}" for i in range(count)]
    stream = random.Random("5:w0.s0:keys")
    expected = [keys[stream.randrange(count)] for _ in range(300)]
    assert _keys_claimed(300, keys, wins_every=10**9) == expected      # every acquire lost
    assert _keys_claimed(300, keys, wins_every=3) == expected          # jobs and back-offs between
