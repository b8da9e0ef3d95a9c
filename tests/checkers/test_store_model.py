"""The store model alone (checkers/model/store_model.py): Redis semantics of keys and expiries, with
no claims layer behind it — a recorder stands in for its `events`."""

import pytest

from leasecheck.checkers.read.audit import parse_line
from leasecheck.checkers.model.store_model import UNKNOWN, Command, Store


class Entry:
    def __init__(self, key, value, expires_ms):
        self.key, self.value, self.expires_ms, self.evictable = key, value, expires_ms, False
        self.token, self.doubt_ms = value, 0.0


class Recorder:
    """The store model's events, written down; a client that never says anything."""

    def __init__(self):
        self.seen = []

    def create(self, key, c, expires_ms):
        self.seen.append(("create", key, expires_ms))
        return Entry(key, c.argv[2] if len(c.argv) > 2 else None, expires_ms)

    def written(self, key, c, old, expires_ms):
        self.seen.append(("written", key, old.value, expires_ms))
        return Entry(key, c.argv[2], expires_ms)

    def removed(self, entry, c, how):
        self.seen.append(("removed", entry.key, how))

    def expiry_changed(self, entry, c, old, new):
        self.seen.append(("expiry", entry.key, old, new))

    def expired(self, entry, c):
        self.seen.append(("expired", entry.key))

    def evicted(self, entry, c):
        self.seen.append(("evicted", entry.key))

    def expired_before(self, entry):
        self.seen.append(("expired_before", entry.key))

    def vanished(self, entry, why, t):
        self.seen.append(("vanished", entry.key, why))

    def touched_unknown(self, c):
        self.seen.append(("unknown", c.name))

    def undecidable(self, entry, c):
        self.seen.append(("undecidable", entry.key))

    def edge(self, entry, c, key, d, by_client, gone):
        self.seen.append(("edge", key, gone))

    def client_view(self, entry, c):
        return None

    def create_seen(self, c):
        return False

    def result_unknown(self, c):
        return True


class Everything:
    def follows(self, c, key):
        return True

    def known(self, db, key):
        return True


def cmd(ms: float, *args):
    line = f"{1000 + ms / 1000:.6f} [0 127.0.0.1:5000] " + " ".join(f'"{a}"' for a in args)
    rec = parse_line(line, 1)
    # as the model makes one (claims._command), unattributed
    return Command(rec.argv, rec.name, rec.db, rec.line, rec.addr, rec.reply, rec.time, None, None, rec.name, 0.0,
                   "audit.log")


@pytest.fixture
def store():
    return Store(Recorder(), Everything(), trust_ms=0.0)


def run(store, *cmds):
    for c in cmds:
        store.apply(cmd(*c))
    return store.events.seen


def test_set_nx_px_creates_then_a_second_create_fails_until_the_expiry(store):
    seen = run(store, (0, "SET", "k", "a", "NX", "PX", "100"), (50, "SET", "k", "b", "NX", "PX", "100"),
               (150, "SET", "k", "c", "NX", "PX", "100"))
    assert seen == [("create", "k", 1000_000 + 100), ("expired", "k"), ("create", "k", 1000_150 + 100)]
    assert store.peek(0, "k").value == "c"


def test_an_expiry_within_the_ambiguous_edge_is_reported_and_decided_by_the_clock(store):
    seen = run(store, (0, "SET", "k", "a", "PX", "100"), (101, "GET", "k"), (101, "DEL", "k"))
    assert ("edge", "k", True) in seen and seen[-1] == ("expired", "k")


def test_overwrite_keepttl_and_expire_flags(store):
    seen = run(store, (0, "SET", "k", "a", "PX", "100"), (10, "SET", "k", "b", "KEEPTTL"),
               (20, "PEXPIRE", "k", "50", "GT"), (30, "PEXPIRE", "k", "500", "GT"),
               (40, "PEXPIRE", "k", "10", "LT"), (45, "PERSIST", "k"))
    assert seen[1] == ("written", "k", "a", 1000_000 + 100)               # KEEPTTL kept the expiry
    assert ("expiry", "k", 1000_100.0, 1000_030 + 500) in seen          # GT: only the later one
    assert ("expiry", "k", 1000_530.0, 1000_040 + 10) in seen           # LT shortens
    assert seen[-1] == ("expiry", "k", 1000_050.0, None)


def test_an_expiry_in_the_past_removes_the_key(store):
    seen = run(store, (0, "SET", "k", "a"), (10, "PEXPIREAT", "k", "5"))
    assert seen[-1] == ("removed", "k", "deleted (expiry set in the past)") and store.peek(0, "k") is None


def test_rejected_commands_change_nothing(store):
    seen = run(store, (0, "SET", "k", "a", "PX", "0"), (1, "SET", "k", "a", "NX", "XX"))
    assert seen == [] and len(store.problems) == 2 and "rejected by the store" in store.problems[0]


def test_a_gap_loses_every_key_and_a_restart_empties_the_store(store):
    run(store, (0, "SET", "k", "a", "PX", "100"), (0, "SET", "j", "a"))
    store.gap(1000.05)
    assert store.peek(0, "k") is UNKNOWN and store.peek(0, "never-seen") is UNKNOWN
    assert run(store, (60, "SET", "k", "b", "NX"))[-1] == ("unknown", "SET")   # NX on a lost key
    store.restart(1000.07)
    assert store.peek(0, "k") is None and store.peek(0, "never-seen") is None


def test_the_end_of_the_audit_tells_apart_expired_and_live_keys(store):
    run(store, (0, "SET", "k", "a", "PX", "100"), (0, "SET", "j", "a", "PX", "900"))
    store.finish(1000.5)
    assert store.events.seen[-2:] == [("expired_before", "k"), ("vanished", "j", "end")]


def test_a_conditional_create_on_an_evictable_key_with_no_known_result_loses_the_key(store):
    run(store, (0, "SET", "k", "a", "PX", "900"))
    store.evicting(True)
    assert run(store, (10, "SET", "k", "b", "NX", "PX", "900"))[-1] == ("undecidable", "k")
    assert store.peek(0, "k") is UNKNOWN


def test_set_ifeq_writes_only_while_the_key_holds_the_value(store):
    """Valkey 8.1's SET ... IFEQ (a renewal without a script): a match rewrites value and expiry,
    a mismatch or an absent key changes nothing, and it cannot be combined with NX or XX."""
    seen = run(store, (0, "SET", "k", "a", "NX", "PX", "100"), (50, "SET", "k", "a", "IFEQ", "a", "PX", "100"),
               (60, "SET", "k", "b", "IFEQ", "x", "PX", "100"), (70, "SET", "gone", "a", "IFEQ", "a", "PX", "100"),
               (80, "SET", "k", "a", "IFEQ", "a", "NX"))
    assert seen == [("create", "k", 1000_000 + 100), ("written", "k", "a", 1000_050 + 100)]
    assert store.peek(0, "k").value == "a" and store.peek(0, "k").expires_ms == 1000_050 + 100
    assert store.peek(0, "gone") is None
    assert any("IFEQ" in p for p in store.problems)
    seen = run(store, (200, "SET", "k", "a", "IFEQ", "a", "PX", "100"))
    assert seen[-1] == ("expired", "k") and store.peek(0, "k") is None   # past the expiry: nothing to match


def test_set_ifeq_on_a_key_whose_value_is_unknown_is_an_unknown_outcome(store):
    store.state[(0, "k")] = UNKNOWN
    assert run(store, (0, "SET", "k", "a", "IFEQ", "a", "PX", "100")) == [("unknown", "SET")]


# -- hash fields: each field an object of its own, under (key, field) ----------------------------

def test_hsetnx_creates_a_field_and_a_second_fails_until_the_hash_key_expires(store):
    seen = run(store, (0, "HSETNX", "h", "f", "a"), (1, "PEXPIRE", "h", "100"), (50, "HSETNX", "h", "f", "b"),
               (60, "HSETNX", "h", "g", "c"), (150, "HSETNX", "h", "f", "d"))
    assert seen[0] == ("create", ("h", "f"), None)
    assert seen[1] == ("expiry", ("h", "f"), None, 1000_001 + 100)          # the hash's expiry reaches the field
    assert ("create", ("h", "g"), 1000_101.0) in seen                       # a new field gets the hash's expiry
    assert seen[-3:] == [("expired", ("h", "f")), ("expired", ("h", "g")), ("create", ("h", "f"), None)]
    assert store.hash_expiry == {}                                          # the whole hash went, its expiry with it


def test_hdel_removes_one_field_and_del_of_the_hash_every_field(store):
    seen = run(store, (0, "HSET", "h", "f", "a", "g", "b"), (5, "HDEL", "h", "f", "x"), (9, "DEL", "h"))
    assert [s for s in seen if s[0] == "create"] == [("create", ("h", "f"), None), ("create", ("h", "g"), None)]
    assert seen[2:] == [("removed", ("h", "f"), "deleted"), ("removed", ("h", "g"), "deleted")]
    assert store.peek(0, ("h", "g")) is None and (0, "h") not in store.hashes


def test_field_expiry_is_the_earlier_of_its_own_and_the_hash_keys(store):
    seen = run(store, (0, "HSETNX", "h", "f", "a"), (1, "HPEXPIRE", "h", "500", "FIELDS", "1", "f"),
               (2, "HPEXPIRE", "h", "100", "GT", "FIELDS", "1", "f"), (3, "PEXPIRE", "h", "200"),
               (4, "HPERSIST", "h", "FIELDS", "1", "f"), (5, "HPEXPIRE", "h", "1", "NX", "FIELDS", "1", "f"))
    assert seen[1] == ("expiry", ("h", "f"), None, 1000_001 + 500)
    assert seen[2] == ("expiry", ("h", "f"), 1000_501.0, 1000_003 + 200)   # GT refused; the hash's is earlier
    # HPERSIST drops the field's own expiry (the hash's still rules: no change); NX then sets one
    assert seen[3:] == [("expiry", ("h", "f"), 1000_203.0, 1000_005 + 1)]
    store.apply(cmd(5.5, "HPEXPIRE", "h", "0", "FIELDS", "1", "f"))         # an expiry in the past removes it
    assert store.events.seen[-1] == ("removed", ("h", "f"), "deleted (expiry set in the past)")


def test_hgetdel_and_set_over_a_hash(store):
    seen = run(store, (0, "HSET", "h", "f", "a", "g", "b"), (1, "HGETDEL", "h", "FIELDS", "1", "f"),
               (2, "SETNX", "h", "x"), (3, "SET", "h", "s"), (4, "HSETNX", "h", "f", "c"))
    assert seen[2] == ("removed", ("h", "f"), "deleted")
    assert seen[3:] == [("removed", ("h", "g"), "deleted"), ("create", "h", None)]   # SETNX refused, SET replaced it
    assert store.peek(0, ("h", "f")) is None                                        # HSETNX on a string: WRONGTYPE


def test_after_a_gap_a_fields_state_is_lost_and_a_create_on_it_is_not_decided(store):
    run(store, (0, "HSETNX", "h", "f", "a"))
    store.gap(0.001)
    seen = run(store, (5, "HSETNX", "h", "f", "b"), (6, "HSETNX", "h", "g", "c"))
    assert seen[-2:] == [("unknown", "HSETNX"), ("unknown", "HSETNX")]   # nobody's result says (Recorder)
    assert store.peek(0, ("h", "f")) is UNKNOWN
