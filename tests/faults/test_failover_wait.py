"""The failover fault keeps the primary stopped past its duration until a Sentinel names a new
primary, bounded: a primary continued before the failover happened would test nothing."""
import threading
import time
from types import SimpleNamespace

import leasecheck.harness.faults.failover as failover
from leasecheck.harness.faults.base import Active, Step


class _Watch:
    def __init__(self, switch_after_s: float | None):
        self.promoted, self.promotion_s, self.sentinels_s = None, None, None
        if switch_after_s is not None:
            threading.Timer(switch_after_s, self._switch).start()

    def _switch(self):
        self.sentinels_s = 0.4

    def finish(self):
        pass


def _stop(watch, started_ago_s: float = 0.0):
    healed = []
    ctx = SimpleNamespace(ledger=SimpleNamespace(heal=healed.append), replication=None)
    node = SimpleNamespace(name="node1", store=SimpleNamespace(kind="embedded"))
    active = Active(Step(0.0, "failover", "primary", 1.0), [7],
                    started=time.monotonic() - started_ago_s,
                    data={"node": node, "watch": watch, "lag_ms": 0, "unreplicated": 0, "begun": time.monotonic()})
    t = time.monotonic()
    measured = failover.Failover().stop(ctx, active)
    return measured, time.monotonic() - t, healed


def test_a_switch_already_seen_heals_at_once():
    w = _Watch(None)
    w.sentinels_s = 1.2
    measured, took, healed = _stop(w)
    assert measured["extended_s"] == 0.0 and took < 0.2 and healed == [7]


def test_the_primary_stays_stopped_until_a_sentinel_names_another():
    measured, took, healed = _stop(_Watch(0.3))
    assert 0.25 <= measured["extended_s"] <= 1.0 and 0.25 <= took and healed == [7]


def test_the_wait_is_bounded(monkeypatch):
    monkeypatch.setattr(failover, "PROMOTION_WAIT_S", 0.5)
    measured, took, healed = _stop(_Watch(None), started_ago_s=0.2)
    assert 0.2 <= took < 1.0 and healed == [7]
    assert measured["took_effect"] is False and "no replica was promoted" in measured["why"]
