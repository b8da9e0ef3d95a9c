"""Claims lost in failover, on small hand-made runs: each node's claims as the store model would
give them (a replica's copies carry the value and, once attributed, their owner), the failover
fault's record, and the history's acquires and releases."""
from types import SimpleNamespace

from leasecheck.checkers.model.claims import FATES, Claim
from leasecheck.checkers.model.clock import StoreClock
from leasecheck.checkers.measures.early_loss import Promises
from leasecheck.checkers.measures.failover import failovers, lost_in_failover
from leasecheck.checkers.measures.mutual_exclusion import holds
from leasecheck.checkers.model.replicated import claim_fates, resolved_claims
from leasecheck.checkers.model.nodes import NodeMeasure
from leasecheck.checkers.properties import PROPERTIES
from leasecheck.checkers.properties import early_loss as early_prop
from leasecheck.checkers.properties import failover as prop
from leasecheck.checkers.properties import fates as fates_prop

MS = 1_000_000
KEY = "lc:r1:job:0"
TTL_MS = 4000


def _claim(i, owner, token, created_s, fate=None, ended_s=None, copy=False):
    return Claim(id=i, db=0, key=KEY, owner=owner, op=None, line=i, created=created_s, expires_ms=None,
                 fate=fate, ended=ended_s, token=token, copy=copy)


def _node(name, claims, complete=True):
    return NodeMeasure(name, claims, [], StoreClock.fixed(0), complete)


def _call(process, attempt, f, t0_ms, t1_ms, value=True):
    base = {"process": process, "f": f, "attempt": attempt, "key": KEY}
    return [dict(base, time=t0_ms * MS, type="invoke"), dict(base, time=t1_ms * MS, type="ok", value=value)]


def _fault(promoted="node2", stopped_after=0.8, promoted_after=1.7, healed_after=3.3):
    measured = {"primary_before": "node1", "promoted": promoted, "stopped_after_s": stopped_after,
                "promoted_after_s": promoted_after if promoted else None, "healed_after_s": healed_after,
                "rejoined_s": 10.0, "lag_ms": 800}
    return {"n": 0, "fault": "failover", "target": "primary", "start_s": 2.5, "end_s": 15.0, "measured": measured}


# A claims at 3.0 s on node1 during the cut (never replicated); node1 stops at 3.3 s; node2 is
# promoted at 4.2 s; B wins the key on node2 at 5.0 s while A's job runs until 6.0 s.
EVENTS = (_call("a", "a.1", "acquire", 3000, 3002) + _call("b", "b.7", "acquire", 4990, 5000)
          + _call("a", "a.1", "release", 6000, 6300) + _call("b", "b.7", "release", 8000, 8001))


def _nodes(replicated_a=False, a_released_at=None):
    a = _claim(1, "a.1", "tokA", 3.001, "released_by_holder" if a_released_at else "expired_after_job",
               a_released_at or 7.0)
    node2 = [_claim(2, "b.7", "tokB", 4.999, "released_by_holder", 8.0)]
    if replicated_a:
        node2.insert(0, _claim(3, "a.1", "tokA", 3.0015, "expired_after_job", 7.0, copy=True))
    return [_node("node1", [a]), _node("node2", node2)]


def test_a_failover_is_placed_on_the_history_clock_from_its_fault_record():
    (fo,) = failovers([_fault()])
    assert (fo.old, fo.new, fo.start, fo.stopped, fo.promoted, fo.end) == (
        "node1", "node2", 2500 * MS, 3300 * MS, 4200 * MS, 5800 * MS)
    assert fo.rejoined == 15800 * MS
    assert failovers([{"fault": "pause", "start_s": 1.0, "measured": {}}]) == []


def test_an_acknowledged_claim_the_promoted_node_never_had_is_lost_and_a_newcomer_makes_it_an_early_loss():
    (lost,) = lost_in_failover(_nodes(), failovers([_fault()]), holds(EVENTS, TTL_MS))
    assert (lost.attempt, lost.node, lost.promoted) == ("a.1", "node1", "node2")
    assert lost.newcomer.attempt == "b.7" and lost.hold.end == 6000 * MS
    d = lost.to_dict()
    assert d["fate"] == "lost_in_failover" and d["cause"] == "failover" and d["newcomer_won_s"] == 5.0


def test_a_claim_the_replica_had_before_the_promotion_is_not_lost():
    assert lost_in_failover(_nodes(replicated_a=True), failovers([_fault()]), holds(EVENTS, TTL_MS)) == []


def test_a_claim_released_before_the_stop_is_not_the_failovers_to_lose():
    assert lost_in_failover(_nodes(a_released_at=3.2), failovers([_fault()]), holds(EVENTS, TTL_MS)) == []


def test_no_promotion_loses_nothing():
    assert lost_in_failover(_nodes(), failovers([_fault(promoted=None)]), holds(EVENTS, TTL_MS)) == []


def test_a_lost_claim_whose_holder_had_let_go_before_the_newcomer_is_no_early_loss():
    events = (_call("a", "a.1", "acquire", 3000, 3002) + _call("a", "a.1", "release", 4500, 4600)
              + _call("b", "b.7", "acquire", 4990, 5000))
    (lost,) = lost_in_failover(_nodes(), failovers([_fault()]), holds(events, TTL_MS))
    assert lost.newcomer is None and "cause" not in lost.to_dict()


def _measured(nodes, events=EVENTS, faults=(_fault(),), topology="replicated"):
    config = {"topology": topology, "ttl_ms": TTL_MS,
              "store_nodes": [{"name": "node1"}, {"name": "node2"}]}
    digest = SimpleNamespace(promises=Promises(), ttl_ms=TTL_MS)
    return SimpleNamespace(nodes=nodes, holds=holds(events, TTL_MS), config=config, faults=lambda: list(faults),
                           digest=digest, jobs={}, claims=None, model=None, failover=None)


def test_a_loss_is_an_early_loss_with_cause_failover_told_with_a_timeline_of_one_column_per_node():
    m = _measured(_nodes())
    part = early_prop.check(m, {})
    assert part.valid is False
    early = part.fields["early_loss"]
    assert early["count"] == 1 and early["by_cause"]["failover"] == 1
    assert sum(early["by_cause"].values()) == 1
    (first,) = early["first"]
    assert (first["holder"], first["newcomer"], first["cause"]) == ("a.1", "b.7", "failover")
    # the lease's deadline (the TTL after the acquire's invocation, less the allowance), as for any cause
    assert first["deadline_s"] == 3.0 + 4.0 - 0.042 and first["newcomer_start_s"] == 5.0
    assert part.failures[0].startswith("1 claim(s) lost in failover while another attempt then held the key "
                                       "(early loss, cause failover)")
    assert "a.1's on lc:r1:job:0, acknowledged by node1 at 3.001 s" in part.failures[0]
    assert "b.7 won the key there at 5.000 s" in part.failures[0]
    (w,) = part.witness
    assert w["kind"] == "failover"
    md = w["markdown"]
    assert "| time (s) | what | node1 | node2 |" in md
    rows = [line for line in md.splitlines() if line.startswith("| ") and "time (s)" not in line]
    assert [r.split(" | ")[0] for r in rows] == ["| 2.500", "| 3.001", "| 3.300", "| 4.200", "| 5.000", "| 5.800",
                                                 "| 6.000", "| 15.800"]
    assert "A's claim created" in rows[1].split(" | ")[2] and "B's claim created" in rows[4].split(" | ")[3]
    # The failover field keeps what only a failover has, and no count of its own: the loss is
    # counted once, as a claim fate and as an early loss.
    f = prop.check(m, {}).fields["failover"]
    assert set(f) == {"failovers", "examples"}
    assert f["failovers"][0]["promoted"] == "node2" and f["failovers"][0]["promoted_s"] == 4.2
    assert f["examples"][0]["held_until_s"] == 6.0 and f["examples"][0]["cause"] == "failover"
    claims = fates_prop.check(m, {}).fields["claims"]
    assert set(claims) == set(FATES) and claims["lost_in_failover"] == 1
    assert claims == dict.fromkeys(FATES, 0) | {"lost_in_failover": 1, "released_by_holder": 1}


def test_the_failover_is_measured_once_for_every_property_that_reports_it():
    m = _measured(_nodes())
    prop.check(m, {})
    first = m.failover
    early_prop.check(m, {}), fates_prop.check(m, {})
    assert m.failover is first and len(first.lost) == 1


def test_the_property_is_valid_when_the_replica_had_every_claim_and_silent_off_replicated_runs():
    m = _measured(_nodes(replicated_a=True))
    part = prop.check(m, {})
    assert part.valid is True and part.fields["failover"]["examples"] == []
    assert "no acknowledged claim lost" in part.notes[0]
    assert early_prop.check(m, {}).fields["early_loss"]["count"] == 0
    assert not prop.applies(_measured(_nodes(), topology="redlock"))
    assert prop.check(_measured(_nodes(), topology="redlock"), {}).fields == {}


def test_a_claim_live_at_the_stop_has_the_fate_of_its_copy_on_the_promoted_node():
    # A's claim was copied to node2 before the stop; A's release then deleted the copy on node2.
    node1 = [_claim(1, "a.1", "tokA", 3.001, "expired_after_job", 7.0)]
    node2 = [_claim(3, "a.1", "tokA", 3.0015, "released_by_holder", 6.2, copy=True),
             _claim(2, "b.7", "tokB", 6.5, "released_by_holder", 8.0)]
    nodes = [_node("node1", node1), _node("node2", node2)]
    fos = failovers([_fault()])
    # two claims (the copy is no claim of its own), A's with its copy's fate
    assert claim_fates(resolved_claims(nodes, fos, [])) == dict.fromkeys(FATES, 0) | {"released_by_holder": 2}
    # the promoted node's audit cut short: A's claim cannot be followed
    nodes[1].complete = False
    assert claim_fates(resolved_claims(nodes, fos, [])) == dict.fromkeys(FATES, 0) | {"released_by_holder": 1, "unknown": 1}


def test_a_claim_gone_before_the_stop_keeps_its_own_fate():
    nodes = _nodes(a_released_at=3.2)
    assert claim_fates(resolved_claims(nodes, failovers([_fault()]), [])) == dict.fromkeys(FATES, 0) | {"released_by_holder": 2}


def test_a_failover_that_promoted_nobody_is_a_doubt():
    part = prop.check(_measured(_nodes(), faults=(_fault(promoted=None),)), {})
    assert part.valid == "unknown" and "promoted no replica" in part.doubts[0]


def test_the_property_is_registered_with_its_own_field():
    assert "failover" in PROPERTIES.names and PROPERTIES.owner("failover") == "failover"


def test_an_incomplete_audit_of_the_promoted_node_proves_no_loss_and_is_a_doubt():
    nodes = _nodes()
    nodes[1].complete = False
    assert lost_in_failover(nodes, failovers([_fault()]), holds(EVENTS, TTL_MS)) == []
    part = prop.check(_measured(nodes), {})
    assert part.valid == "unknown" and any("the audit of node2 is incomplete" in d for d in part.doubts)
    part = prop.check(_measured(_nodes()[:1]), {})
    assert any("no audit for node2" in d for d in part.doubts)
