"""Split brain, on small hand-made replicated runs: each node's claims as the store model would give
them and the failover fault's record. node1 is stopped at 3.3 s, node2 promoted at 4.2 s, node1
continued at 5.8 s and made a replica of node2 at 15.8 s."""
from pathlib import Path
from types import SimpleNamespace

from leasecheck.checkers import check_run

from leasecheck.checkers.model.claims import Claim
from leasecheck.checkers.model.clock import StoreClock
from leasecheck.checkers.measures.failover import failovers
from leasecheck.checkers.measures.mutual_exclusion import holds
from leasecheck.checkers.model.nodes import NodeMeasure
from leasecheck.checkers.properties import PROPERTIES
from leasecheck.checkers.properties import split_brain as prop
from leasecheck.checkers.measures.split_brain import off_primary, primary_at, reigns, witness_markdown

MS = 1_000_000
KEY = "lc:r1:job:0"


def _claim(i, owner, token, created_s, fate="released_by_holder", ended_s=None, copy=False, key=KEY):
    return Claim(id=i, db=0, key=key, owner=owner, op=None, line=i, created=created_s, expires_ms=None,
                 fate=fate, ended=ended_s, token=token, copy=copy)


def _fault(promoted="node2"):
    measured = {"primary_before": "node1", "promoted": promoted, "stopped_after_s": 0.8,
                "promoted_after_s": 1.7 if promoted else None, "healed_after_s": 3.3, "rejoined_s": 10.0,
                "lag_ms": 800}
    return {"n": 0, "fault": "failover", "target": "primary", "start_s": 2.5, "end_s": 15.0, "measured": measured}


def _nodes(c_at=6.1, c_key=KEY):
    """A's claim on node1 before the stop (replicated, released on node2 at 4.5 s), B's on node2
    from 5.0 s to 8.0 s, and C's create on node1 at ``c_at`` (expiring 4 s later)."""
    node1 = [_claim(1, "a.1", "tokA", 3.0, ended_s=4.5),
             _claim(2, "c.3", "tokC", c_at, "expired_after_job", c_at + 4.0, key=c_key)]
    node2 = [_claim(3, "a.1", "tokA", 3.001, ended_s=4.5, copy=True),
             _claim(4, "b.7", "tokB", 5.0, ended_s=8.0)]
    return [NodeMeasure("node1", node1, [], StoreClock.fixed(0), True),
            NodeMeasure("node2", node2, [], StoreClock.fixed(0), True)]


HELD = {"a.1", "b.7", "c.3"}   # attempts whose acquire returned True


def _won(attempt, t_ms):
    base = {"process": attempt[0], "f": "acquire", "attempt": attempt, "key": KEY}
    return [dict(base, time=t_ms * MS, type="invoke"), dict(base, time=(t_ms + 1) * MS, type="ok", value=True)]


def _measured(nodes, faults=(_fault(),), c_acked=True):
    config = {"topology": "replicated", "ttl_ms": 4000, "store_nodes": [{"name": "node1"}, {"name": "node2"}]}
    events = _won("a.1", 2999) + _won("b.7", 4999)
    if c_acked:
        events += _won("c.3", 6099)
    return SimpleNamespace(nodes=nodes, holds=holds(events, 4000), config=config, faults=lambda: list(faults),
                           digest=SimpleNamespace(ttl_ms=4000), jobs={}, claims=None, model=None, failover=None)


def test_the_primary_of_each_moment_follows_the_failovers():
    rs = reigns(failovers([_fault()]))
    assert [(r.node, r.start, r.end) for r in rs] == [("node1", 0, 3300 * MS), ("node2", 4200 * MS, None)]
    assert primary_at(rs, 1000 * MS) == "node1" and primary_at(rs, 6000 * MS) == "node2"
    assert primary_at(rs, 3500 * MS) == "node2"   # between the stop and the promotion: the node promoted next
    assert reigns([]) == []


def test_a_claim_on_the_old_primary_after_the_failover_while_another_holds_the_key_on_the_new_one_is_a_split_brain():
    (x,) = off_primary(_nodes(), failovers([_fault()]), HELD)
    assert (x.claim.owner, x.node, x.primary, x.rival.owner) == ("c.3", "node1", "node2", "b.7")
    assert (x.created, x.until, x.rival_created, x.rival_until) == (6100 * MS, 10100 * MS, 5000 * MS, 8000 * MS)
    part = prop.check(_measured(_nodes()), {})
    assert part.valid is False
    f = part.fields["split_brain"]
    assert f["count"] == 1 and f["off_primary"] == 1
    assert f["examples"][0] | {} == {"attempt": "c.3", "key": KEY, "node": "node1", "primary": "node2",
                                     "created_s": 6.1, "until_s": 10.1, "acknowledged": True, "fault": 0, "rival": "b.7",
                                     "rival_created_s": 5.0, "rival_until_s": 8.0}
    (reason,) = part.failures
    assert reason.startswith("split brain: 1 claim(s) created on a node that was no longer the primary")
    assert "c.3's on lc:r1:job:0, created on node1 at 6.100 s (node1 had been stopped at 3.300 s and node2 " \
           "promoted at 4.200 s), and b.7's claim on node2, the primary, created at 5.000 s and live until 8.000 s, " \
           "overlapped it" in reason
    (w,) = part.witness
    assert w["kind"] == "split_brain" and "| time (s) | what | node1 | node2 |" in w["markdown"]
    rows = [r for r in w["markdown"].splitlines() if r.startswith("| ") and "time (s)" not in r]
    assert [r.split(" | ")[0] for r in rows] == ["| 3.300", "| 4.200", "| 5.000", "| 5.800", "| 6.100", "| 8.000",
                                                 "| 10.100", "| 15.800"]
    c_row = rows[4].split(" | ")
    assert "A's claim created (not the primary)" in c_row[2] and "B's claim live" in c_row[3]


def test_the_old_primarys_claim_ends_at_the_latest_when_it_rejoins_as_a_replica():
    (x,) = off_primary(_nodes(c_at=14.0), failovers([_fault()]), HELD)
    assert x.until == 15800 * MS and x.rival is None    # B's claim ended at 8.0 s


def test_an_off_primary_claim_no_other_attempt_overlapped_is_a_note_not_a_failure():
    part = prop.check(_measured(_nodes(c_at=9.0)), {})
    assert part.valid is True and part.failures == []
    assert part.fields["split_brain"] == {"count": 0, "off_primary": 1, "examples": [
        {"attempt": "c.3", "key": KEY, "node": "node1", "primary": "node2", "created_s": 9.0, "until_s": 13.0,
         "acknowledged": True, "fault": 0}]}
    (note,) = part.notes
    assert note.startswith("1 claim(s) created on a node that was not the primary then (1 acknowledged to their "
                           "attempt), none of them while another holder held the key on the primary: the first is c.3's")


def test_an_off_primary_claim_whose_acquire_was_not_acknowledged_holds_no_lease_and_is_a_note():
    """A SET left in the stopped primary's socket runs when it is continued; its acquire had timed out."""
    part = prop.check(_measured(_nodes(), c_acked=False), {})
    assert part.valid is True and part.fields["split_brain"]["count"] == 0
    assert part.fields["split_brain"]["examples"][0]["acknowledged"] is False
    assert "its acquire was not acknowledged" in part.notes[0]


def test_a_claim_on_the_new_primary_counts_only_while_that_node_was_the_primary():
    """A's copy on node2 (the primary from 4.2 s) lives until 4.5 s; B's claim is left out."""
    nodes = _nodes(c_at=4.4)
    nodes[1].claims.pop()
    (x,) = off_primary(nodes, failovers([_fault()]), HELD)
    assert x.rival.owner == "a.1" and x.rival_until == 4500 * MS    # both live from 4.4 s to 4.5 s
    nodes = _nodes(c_at=3.9)
    nodes[1].claims.pop()
    nodes[1].claims[0].ended = 4.1     # gone from node2 before its promotion: it never held the key on a primary
    (x,) = off_primary(nodes, failovers([_fault()]), HELD)
    assert x.rival is None


def test_another_key_on_the_old_primary_is_no_split_brain_of_this_one():
    (x,) = off_primary(_nodes(c_key="lc:r1:job:1"), failovers([_fault()]), HELD)
    assert x.rival is None


def test_claims_on_the_primary_of_their_moment_and_replica_copies_are_not_off_the_primary():
    nodes = _nodes()
    nodes[0].claims.pop()    # C's create on the continued node1
    assert off_primary(nodes, failovers([_fault()]), HELD) == []
    part = prop.check(_measured(nodes), {})
    assert part.valid is True and part.notes == [] and part.fields["split_brain"]["off_primary"] == 0


def test_without_a_failover_or_a_promotion_nothing_says_the_primary_changed():
    assert off_primary(_nodes(), [], HELD) == []
    nodes = _nodes()
    nodes[1].claims.pop()    # B's create on node2, which with no promotion stayed a replica
    assert off_primary(nodes, failovers([_fault(promoted=None)]), HELD) == []    # node1, continued, is still the primary


def test_the_property_owns_its_field_and_is_left_out_of_other_topologies():
    assert PROPERTIES.owner("split_brain") == "split_brain"
    m = _measured(_nodes())
    m.config["topology"] = "redlock"
    assert prop.applies(m) is False


def test_a_recorded_failover_without_the_cut_shows_a_timed_out_set_run_by_the_continued_primary():
    """tests/checkers/replicated/failover-nolag-ok: w1.s0.67's SET reached node1 as it was stopped,
    timed out at the client, and ran when node1 was continued, after node2's promotion: a claim off
    the primary, reported; its acquire was not acknowledged, so the run stays valid."""
    r = check_run(Path(__file__).parent / "replicated" / "failover-nolag-ok")
    assert r["valid"] is True and r["split_brain"]["count"] == 0 and r["split_brain"]["off_primary"] == 1
    (x,) = r["split_brain"]["examples"]
    assert (x["attempt"], x["node"], x["primary"], x["acknowledged"]) == ("w1.s0.67", "node1", "node2", False)
    assert x["created_s"] > r["failover"]["failovers"][0]["promoted_s"]   # run when node1 was continued
    assert any(n.startswith("1 claim(s) created on a node that was not the primary then") for n in r["reasons"])


def test_a_rival_that_won_after_the_off_primary_claim_is_drawn_when_it_won():
    (x,) = off_primary(_nodes(c_at=4.9), failovers([_fault()]), HELD)
    assert x.rival.owner == "b.7" and x.rival_created == 5000 * MS
    rows = [r.split(" | ") for r in witness_markdown(x, ["node1", "node2"]).splitlines() if r.startswith("| 4.900")]
    assert rows[0][2] == "A's claim created (not the primary)" and rows[0][3] == "primary |"


def test_a_split_brain_is_the_first_violation_when_its_later_claim_was_created():
    from leasecheck.checkers.properties import first_violation
    found = {"split_brain": prop.check(_measured(_nodes()), {}).fields["split_brain"]}
    m = SimpleNamespace(model=None, digest=SimpleNamespace(proof=SimpleNamespace(proven=lambda starts: []),
                                                           faults=SimpleNamespace(starts=[])))
    assert first_violation.check(m, found).fields["first_violation"] == {"kind": "split_brain", "time_s": 6.1}


def test_the_diagnosis_names_a_split_brain_first():
    from leasecheck.checkers.present.diagnosis import diagnose
    said = diagnose({"split_brain": {"count": 1, "off_primary": 1, "examples": []},
                     "lost_while_held": {"deadline_passed": 1}})
    assert said[0].startswith("1 claim was created on the old primary after a failover") and "split brain" in said[0]
    assert not any("split brain" in s for s in diagnose({"split_brain": {"count": 0}, "lost_while_held": {}}))


def test_an_overlap_of_the_two_holders_of_a_split_brain_has_that_cause():
    from leasecheck.checkers.measures.causes import overlap_causes
    from leasecheck.checkers.read.jobs import JobRun
    runs = {"b.7": JobRun("b.7", KEY, 5000 * MS, 8000 * MS), "c.3": JobRun("c.3", KEY, 6100 * MS, 9100 * MS)}
    claims = [_claim(4, "b.7", "tokB", 5.0, ended_s=8.0), _claim(2, "c.3", "tokC", 6.1, "expired_after_job", 10.1)]
    split = {frozenset(("c.3", "b.7"))}
    assert overlap_causes(runs, 10000 * MS, claims, 4000, split=split)["split_brain"] == 1
    without = overlap_causes(runs, 10000 * MS, claims, 4000)
    assert without["split_brain"] == 0 and sum(without.values()) == 1     # told as something else
