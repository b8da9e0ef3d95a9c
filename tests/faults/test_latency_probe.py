"""The latency fault's probe: the least round trip of 3 PINGs through the proxy, and more (up to
``PROBE_MAX`` in all) while the least is still beyond the toxic's reach — a loaded machine only
lengthens a round trip, so one more PING can find the toxic's own delay where 3 were all late."""
from types import SimpleNamespace

import pytest

from leasecheck.harness.faults import network


class _Clock:
    def __init__(self):
        self.now = 0.0

    def monotonic(self):
        return self.now


@pytest.fixture
def pings(monkeypatch):
    """``pings(ms, ...)``: the probe's PINGs take these round trips in turn; returns the probe's
    answer and how many PINGs it sent."""
    clock = _Clock()
    monkeypatch.setattr(network.time, "monotonic", clock.monotonic)

    def probe(*rtts_ms, **kw):
        sent = []

        class Client:
            def ping(self):
                clock.now += rtts_ms[len(sent)] / 1000
                sent.append(1)

            def close(self):
                pass
        monkeypatch.setattr(network, "harness_client", lambda *a, **k: Client())
        node = SimpleNamespace(proxy=SimpleNamespace(listen_port=1))
        return network._probe_rtt(node, 3, **kw), len(sent)
    return probe


def test_three_pings_when_the_least_is_within_reach(pings):
    assert pings(104, 131, 125, 99, enough_ms=120) == (104, 3)


def test_more_pings_while_every_round_trip_was_late(pings):
    assert pings(130, 125, 140, 123, 101, 150, enough_ms=120) == (101, 5)


def test_at_most_probe_max_pings(pings):
    rtt, sent = pings(*[200 + i for i in range(20)], enough_ms=120)
    assert (rtt, sent) == (200, network.PROBE_MAX)


def test_without_a_reach_three_pings(pings):
    assert pings(130, 125, 140, 101, enough_ms=None) == (125, 3)
