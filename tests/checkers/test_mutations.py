"""Mutation tests: take a valid generated run, alter one thing, and demand that the checker either
catches it (valid False, valid "unknown", or a disagreement) or that the change is provably
harmless, in which case the result must be unchanged.
"""
import copy
import random

import pytest
from hypothesis import assume, given, settings, strategies as st

from brute_oracle import oracle
from reference_model import PREFIX, STYLES, Line, generate, replay

pytestmark = pytest.mark.slow   # hypothesis searches over generated runs, seconds each: not in the fast subset

SEEDS = st.integers(0, 2**40)
SAME = ("valid", "foreign_releases", "claims", "disagreements", "releases_found_nothing", "overlap",
        "token_reuse", "walk_ins")


def valid_run(seed, **kw):
    rng = random.Random(seed)
    params = dict(workers=rng.randint(2, 3), slots=rng.randint(1, 2), keys=rng.randint(1, 2),
                  ttl_ms=rng.choice((50, 300)), release=rng.choice(STYLES), renew=rng.random() < 0.3)
    run = generate(rng, **(params | kw))
    # A GET-compare-DEL run can lose its race on its own: then it is not a valid run to mutate.
    assume(not run.truth.foreign and not run.truth.token_reuse)
    result = run.check()
    assert result["valid"] is True and result["disagreements"] == []
    return rng, run, result


def rng_workers(seed):
    return 3 + seed % 2


def caught(result) -> bool:
    return result["valid"] is not True or bool(result["disagreements"])


def unchanged(result, base):
    for k in SAME:
        assert result[k] == base[k], k


def cmd_lines(run):
    return [i for i, l in enumerate(run.lines) if isinstance(l, Line) and l.addr != "lua"
            and not l.args[1].startswith("leasecheck:")]


@settings(max_examples=40, deadline=None)
@given(SEEDS)
def test_two_attempts_sharing_a_token_is_caught(seed):
    rng, run, _ = valid_run(seed)
    created = [c for c in run.truth.claims]
    assume(len({c.owner for c in created}) >= 2)
    a, b = rng.sample(created, 2)
    assume(a.owner != b.owner)
    bad = copy.deepcopy(run)
    for i, l in enumerate(bad.lines):          # B's claim is now written with A's token
        if isinstance(l, Line) and l.args[:3] == ("SET", b.key, b.token):
            bad.lines[i] = Line(l.t, l.addr, ("SET", b.key, a.token) + l.args[3:])
    result = bad.check()
    assert result["valid"] is False and result["token_reuse"]["tokens"] == 1
    assert set(result["token_reuse"]["example"]) == {a.owner, b.owner}


@settings(max_examples=60, deadline=None)
@given(SEEDS)
def test_a_release_moved_past_the_ttl_onto_another_claim_is_caught(seed):
    """A's own DEL, moved after its claim expired and B claimed the key, deletes B's claim."""
    rng, run, _ = valid_run(seed, release="del", keys=1, claims_cap=1, workers=rng_workers(seed))
    last_on_addr = {}
    for i in cmd_lines(run):
        last_on_addr[run.lines[i].addr] = i
    dels = {}
    for i in last_on_addr.values():             # a DEL that is its connection's last command
        l = run.lines[i]
        if l.args[0] == "DEL":
            dels[i] = l
    choices = []
    for i, d in dels.items():
        mine = [c for c in run.truth.claims if c.fate == "released_by_holder" and c.key == d.args[1]
                and c.created < d.t and c.owner.rsplit(".", 1)[0] == _slot_of_addr(run, d.addr)]
        if not mine:
            continue
        a = max(mine, key=lambda c: c.created)
        for j in cmd_lines(run):
            l = run.lines[j]
            b = [c for c in run.truth.claims if c.created == l.t and c.key == l.args[1] and c.owner != a.owner]
            if j > i and l.args[0] == "SET" and b and l.t > a.expiry:
                choices.append((i, j, a, b[0]))
    assume(choices)
    i, j, a, b = rng.choice(choices)
    bad = copy.deepcopy(run)
    line = bad.lines[i]
    t_new = bad.lines[j].t + 5
    bad.lines.insert(j + 1, Line(t_new, line.addr, line.args))
    del bad.lines[i]
    moved = {"job_end": -3, "effect": -4}
    for e in bad.events:
        if e.get("attempt") == a.owner:
            if e["type"] in moved:
                e["time"] = (t_new + moved[e["type"]]) * 1000
            elif e.get("f") == "release":
                e["time"] = (t_new + (-2 if e["type"] == "invoke" else 2)) * 1000
    result = bad.check()
    assert result["valid"] is False and result["foreign_releases"] >= 1
    # A's DEL now lands on whatever claim is live right after B's SET (B's, unless the move's
    # knock-on effects put another there first): A is a foreign remover either way.
    assert any(f.remover == a.owner for f in replay(bad).foreign)


@settings(max_examples=60, deadline=None)
@given(SEEDS)
def test_a_deleted_sent_entry_is_caught(seed):
    rng, run, _ = valid_run(seed)
    done = [e for e in run.events if e.get("sent")]
    bad = copy.deepcopy(run)
    e = [x for x in bad.events if x.get("sent")][rng.randrange(len(done))]
    del e["sent"][rng.randrange(len(e["sent"]))]
    result = bad.check()
    # The command's audit line is now in no sent list: an orphan, always a disagreement
    # (no call of its slot is left open to give it to).
    assert any("is in no sent list" in d for d in result["disagreements"]), result["disagreements"]


def _slot_of_addr(run, addr):
    for l in run.lines:
        if isinstance(l, Line) and l.addr == addr and l.args[0] == "ECHO":
            return l.args[1].split(":")[-1].rsplit(".", 1)[0]


def _key(line):
    return line.args[1] if len(line.args) > 1 and line.args[0] != "EVALSHA" and line.args[0] != "EVAL" else \
        line.args[3]


@settings(max_examples=150, deadline=None)
@given(SEEDS)
def test_two_audit_lines_of_different_connections_swapped(seed):
    rng, run, base = valid_run(seed)
    blocks = []                                  # [start, end) of a command and its script lines
    for i, l in enumerate(run.lines):
        if isinstance(l, Line) and l.addr != "lua":
            blocks.append([i, i + 1])
        elif isinstance(l, Line):
            blocks[-1][1] = i + 1
    pairs = [(x, y) for x, y in zip(blocks, blocks[1:])
             if run.lines[x[0]].addr != run.lines[y[0]].addr]
    assume(pairs)
    x, y = rng.choice(pairs)
    first, second = run.lines[x[0]], run.lines[y[0]]
    bad = copy.deepcopy(run)
    bad.lines[x[0]:y[1]] = run.lines[y[0]:y[1]] + run.lines[x[0]:x[1]]
    result = bad.check()
    ours = [l for l in (first, second) if l.args[0] != "ECHO"]
    keys = {_key(l) for l in ours}
    if len(ours) < 2 or len(keys) == 2:
        # Provably harmless: a connection marker binds an address, and the numbering counts only
        # lines from that address, so moving it past another address's line changes no
        # attribution; and two commands on different keys commute (Redis keeps state and expiry
        # per key), while each keeps its logged time: every key sees the same commands at the
        # same times in the same order.
        unchanged(result, base)
    elif not caught(result):
        # Same key and nothing flagged: then the swap must not matter to any claim. The
        # independent oracle must find the same fates and foreign releases in both orders, and
        # the checker's verdict must be unchanged (e.g. two failed SET NX, or a GET, whose reply
        # the history does not record, next to anything).
        assert oracle(bad.history(), bad.audit_text(), bad.samples, PREFIX) == \
            oracle(run.history(), run.audit_text(), run.samples, PREFIX)
        unchanged(result, base)
