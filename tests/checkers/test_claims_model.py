"""The store model: expiry (and its ambiguous edge), fates, foreign releases, disagreements."""
import json
from pathlib import Path

from leasecheck.checkers import check
from leasecheck.checkers.read.audit import parse_audit

S0 = 1795951565.0
CLOCK = [{"time": 0, "rtt_ns": 0, "store_us": int(S0 * 1e6)}]
CONFIG = {"key_prefix": "lc:", "max_overlap": None}
K = "lc:job"


class Run:
    """A tiny run: one connection per slot, commands written with their history call."""

    def __init__(self):
        self.events = [{"time": 0, "process": "harness", "type": "run_start"}]
        self.lines, self.seq = [], {}
        self.generation = 0   # connections are re-made (c1, c2, ...) after a store restart

    def cmd(self, ms, attempt, *args, lua=()):
        slot = attempt.rsplit(".", 1)[0]
        conn = f"{slot}.c{self.generation}"
        addr = f"127.0.0.1:{5000 + 100 * self.generation + len(self.seq)}" if slot not in self.seq else self.seq[slot][0]
        if slot not in self.seq:
            self.seq[slot] = [addr, 0]
            self.line(ms, addr, "ECHO", "leasecheck:conn:" + conn)
        self.line(ms, addr, *args)
        for extra in lua:
            self.line(ms + 0.001, "lua", *extra)
        self.seq[slot][1] += 1
        return [conn, self.seq[slot][1] - 1, args[0].upper()]

    def line(self, ms, addr, *args):
        self.lines.append(f"{S0 + ms / 1000:.6f} [0 {addr}] " + " ".join(json.dumps(a) for a in args))

    def call(self, ms, attempt, f, kind, value, *cmds):
        """cmds: tuples of command args (or (args, lua-lines)) sent at ms+1, ms+2, ..."""
        slot = attempt.rsplit(".", 1)[0]
        sent = [self.cmd(ms + 1 + i, attempt, *c) if isinstance(c[0], str) else self.cmd(ms + 1 + i, attempt, *c[0], lua=c[1])
                for i, c in enumerate(cmds)]
        self.ev(ms, slot, "invoke", f=f, attempt=attempt, key=K)
        done = {"value": value} if kind != "info" else {"error": "timeout"}
        self.ev(ms + 1 + len(cmds), slot, kind, f=f, attempt=attempt, key=K, sent=sent, **done)

    def directive(self, text):
        self.lines.append("# " + text)
        self.seq.clear()
        self.generation += 1

    def job(self, ms, attempt, kind):
        self.ev(ms, attempt.rsplit(".", 1)[0], kind, attempt=attempt, key=K)

    def ev(self, ms, process, type_, **kw):
        self.events.append({"time": int(ms * 1e6), "process": process, "type": type_, **kw})

    def check(self, end=True, extra=()):
        self.events.sort(key=lambda e: e["time"])
        text = "OK\n" + "".join(l + "\n" for l in self.lines + list(extra)) + ("# end\n" if end else "")
        return check(self.events, parse_audit(text), CONFIG, clock_samples=CLOCK)


def test_del_at_the_expiry_edge_trusts_the_client():
    for value, fate in ((True, "released_by_holder"), (False, "expired_after_job")):
        run = Run()
        run.call(10, "w0.s0.0", "acquire", "ok", True, ("SET", K, "t", "NX", "PX", "100"))   # expires at 111 ms
        run.call(110, "w0.s0.0", "release", "ok", value, ("DEL", K))                        # DEL at 111 ms
        result = run.check()
        assert result["claims"][fate] == 1, result
        assert result["disagreements"] == []
        assert result["expiry_edge"]["count"] == 1
        assert "from the expiry" in result["expiry_edge"]["examples"][0] and "client's result" in result["expiry_edge"]["examples"][0]


def test_a_delete_by_name_of_another_attempts_claim_at_the_expiry_edge_trusts_the_client():
    """Redis judges expiry in whole milliseconds: a DEL 0.02 ms past the claim's expiry as the
    audit's microseconds read it can still find the key. w0's release deletes by name (its only
    DEL) and its true says it removed w1's claim: a foreign release, not a disagreement; false
    says the claim had expired."""
    for value, foreign in ((True, 1), (False, 0)):
        run = Run()
        run.call(10, "w1.s0.0", "acquire", "ok", True, ("SET", K, "t1", "NX", "PX", "100"))   # expires at 111 ms
        run.job(12, "w1.s0.0", "job_start")
        run.call(110.02, "w0.s0.0", "release", "ok", value, ("DEL", K))                     # DEL at 111.02 ms
        run.job(200, "w1.s0.0", "job_end")
        result = run.check()
        assert result["foreign_releases"] == foreign and result["disagreements"] == [], result
        assert result["claims"]["foreign_release" if foreign else "expired_while_held"] == 1, result
        assert result["expiry_edge"]["count"] == 1


def test_a_release_with_several_deletes_is_not_read_as_one_delete_by_name():
    """A release that sent two DELs (a key on each of two stores, say) returns one result for
    both: it says nothing about another attempt's claim, so the store clock decides (gone)."""
    run = Run()
    run.call(10, "w1.s0.0", "acquire", "ok", True, ("SET", K, "t1", "NX", "PX", "100"))
    run.call(110.02, "w0.s0.0", "release", "ok", False, ("DEL", K), ("DEL", "lc:other"))   # DEL at 111.02 ms
    result = run.check()
    assert result["foreign_releases"] == 0 and result["claims"]["expired_after_job"] == 1, result


def test_set_nx_after_expiry_creates_a_new_claim():
    run = Run()
    run.call(10, "w0.s0.0", "acquire", "ok", True, ("SET", K, "a", "NX", "PX", "100"))
    run.call(50, "w1.s0.0", "acquire", "fail", False, ("SET", K, "b", "NX", "PX", "100"))
    run.call(200, "w1.s0.1", "acquire", "ok", True, ("SET", K, "b", "NX", "PX", "100"))
    result = run.check()
    assert result["claims"]["expired_after_job"] == 1 and result["claims"]["still_held"] == 1
    assert result["disagreements"] == [] and result["valid"] is True


def test_expiry_shortened_by_another_attempt_is_a_foreign_release():
    run = Run()
    run.call(10, "w0.s0.0", "acquire", "ok", True, ("SET", K, "a", "NX", "PX", "10000"))
    run.call(50, "w1.s0.0", "renew", "ok", True, ("PEXPIRE", K, "10"))
    result = run.check()
    assert result["foreign_releases"] == 1 and result["valid"] is False
    assert "expiry shortened" in result["reasons"][0]


def test_overwrite_by_another_attempt_is_a_foreign_release():
    run = Run()
    run.call(10, "w0.s0.0", "acquire", "ok", True, ("SET", K, "a", "NX", "PX", "10000"))
    run.call(50, "w1.s0.0", "acquire", "ok", True, ("SET", K, "b", "PX", "10000"))
    result = run.check()
    assert result["claims"]["foreign_release"] == 1 and result["claims"]["still_held"] == 1


def test_own_renewal_and_keepttl_are_not_foreign():
    run = Run()
    run.call(10, "w0.s0.0", "acquire", "ok", True, ("SET", K, "a", "NX", "PX", "100"))
    run.call(50, "w0.s0.0", "renew", "ok", True,
             (("EVAL", "script", "1", K, "a", "1000"), [("get", K), ("pexpire", K, "1000")]))
    run.call(500, "w0.s0.0", "release", "ok", True, ("DEL", K))    # past the first deadline, before the renewed one
    result = run.check()
    assert result["claims"]["released_by_holder"] == 1 and result["disagreements"] == []


def test_acquire_reported_ok_without_a_create_is_a_disagreement():
    run = Run()
    run.call(10, "w0.s0.0", "acquire", "ok", True, ("SET", K, "a", "NX", "PX", "10000"))
    run.call(50, "w1.s0.0", "acquire", "ok", True, ("SET", K, "b", "NX", "PX", "10000"))
    result = run.check()
    assert result["disagreements"] == ["w1.s0.0 acquire reported ok true, but the audit shows no successful create"]


def test_unattributed_delete_makes_the_claim_unknown():
    run = Run()
    run.call(10, "w0.s0.0", "acquire", "ok", True, ("SET", K, "a", "NX", "PX", "10000"))
    result = run.check(extra=[f'{S0 + 0.1:.6f} [0 10.0.0.9:1] "DEL" "{K}"'])
    assert result["claims"]["unknown"] == 1 and result["foreign_releases"] == 0
    assert result["valid"] == "unknown" and result["audit"]["unattributed"] == 1


def test_a_gap_loses_the_state():
    run = Run()
    run.call(10, "w0.s0.0", "acquire", "ok", True, ("SET", K, "a", "NX", "PX", "10000"))
    run.lines.append("# gap reader reconnected")
    run.call(100, "w1.s0.0", "acquire", "ok", True, ("SET", K, "b", "NX", "PX", "10000"))
    result = run.check()
    assert result["audit"]["complete"] is False and result["valid"] == "unknown"
    assert result["claims"]["unknown"] == 1


def test_other_keys_are_ignored():
    run = Run()
    run.call(10, "w0.s0.0", "acquire", "ok", True, ("SET", K, "a", "NX", "PX", "10000"))
    result = run.check(extra=[f'{S0 + 0.1:.6f} [0 10.0.0.9:1] "DEL" "other:key"'])
    assert result["claims"]["still_held"] == 1 and result["valid"] is True


def test_store_restart_loses_live_claims_and_empties_every_key():
    run = Run()
    run.call(10, "w0.s0.0", "acquire", "ok", True, ("SET", K, "a", "NX", "PX", "10000"))
    run.directive("restart store killed by the harness")
    run.call(200, "w1.s0.0", "acquire", "ok", True, ("SET", K, "b", "NX", "PX", "10000"))
    run.call(300, "w0.s0.0", "release", "ok", False, ("DEL", K))  # naive DEL after the restart
    result = run.check()
    assert result["claims"]["lost_in_restart"] == 1
    assert result["foreign_releases"] == 1          # w0's DEL removed w1's fresh claim
    assert result["audit"]["complete"] is True and result["disagreements"] == []


def test_eviction_window_claims_vanish_without_a_foreign_release():
    run = Run()
    run.call(10, "w0.s0.0", "acquire", "ok", True, ("SET", K, "a", "NX", "PX", "10000"))
    run.line(50, "127.0.0.1:9999", "ECHO", "leasecheck:fault:0:evict:start")
    run.line(90, "127.0.0.1:9999", "ECHO", "leasecheck:fault:0:evict:end")
    # The store evicted w0's claim: w1's create succeeds although the model still had it.
    run.call(100, "w1.s0.0", "acquire", "ok", True, ("SET", K, "b", "NX", "PX", "10000"))
    run.call(200, "w0.s0.0", "release", "ok", False, ((("EVALSHA", "sha", "1", K, "a"), [("get", K)])))
    result = run.check()
    assert result["claims"]["evicted"] == 1 and result["claims"]["still_held"] == 1
    assert result["foreign_releases"] == 0 and result["disagreements"] == []


def test_naive_delete_of_an_evictable_claim_needs_proof_it_removed_something():
    for removed, fate, foreign in ((False, "evicted", 0), (True, "foreign_release", 1)):
        run = Run()
        run.call(10, "w0.s0.0", "acquire", "ok", True, ("SET", K, "a", "NX", "PX", "10000"))
        run.line(50, "127.0.0.1:9999", "ECHO", "leasecheck:fault:0:evict:start")
        run.call(100, "w1.s0.0", "release", "ok", removed, ("DEL", K))
        result = run.check()
        assert result["claims"][fate] == 1 and result["foreign_releases"] == foreign, result


def test_a_send_lost_with_its_connection_then_retried_is_no_disagreement():
    run = Run()
    # w0's SET went out on c0, the connection died before it reached the store, the client
    # retried on c1 and got its answer: only the retry is in the (complete) audit.
    run.generation = 1   # the retry's connection is c1
    sent = [["w0.s0.c0", 0, "SET"], run.cmd(12, "w0.s0.0", "SET", K, "a", "NX", "PX", "1000")]
    run.ev(10, "w0.s0", "invoke", f="acquire", attempt="w0.s0.0", key=K)
    run.ev(13, "w0.s0", "ok", f="acquire", attempt="w0.s0.0", key=K, value=True, sent=sent)
    result = run.check()
    assert result["disagreements"] == [] and result["valid"] is True, result


def test_client_proof_beats_a_logged_time_that_drifted_from_the_expiry_judgement():
    # w1's create is logged 40 ms before w0's claim expires, yet the store answered OK: Redis
    # judged expiry by a later reading of its clock (descheduled in between, or a clock step).
    run = Run()
    run.call(10, "w0.s0.0", "acquire", "ok", True, ("SET", K, "a", "NX", "PX", "100"))      # expiry 111
    run.call(70, "w1.s0.0", "acquire", "ok", True, ("SET", K, "b", "NX", "PX", "100"))      # logged 71
    run.call(120, "w1.s0.0", "release", "ok", True,
             (("EVALSHA", "sha", "1", K, "b"), [("get", K), ("del", K)]))
    result = run.check()
    assert result["foreign_releases"] == 0 and result["disagreements"] == [], result
    assert result["claims"]["released_by_holder"] == 1
    assert result["expiry_edge"]["count"] == 1


def test_a_contradiction_far_from_any_expiry_is_still_a_disagreement():
    run = Run()
    run.call(10, "w0.s0.0", "acquire", "ok", True, ("SET", K, "a", "NX", "PX", "10000"))
    run.call(70, "w1.s0.0", "acquire", "ok", True, ("SET", K, "b", "NX", "PX", "100"))
    result = run.check()
    assert any("no successful create" in d for d in result["disagreements"])


def test_an_overwrite_of_an_evictable_claim_is_undecided_not_foreign():
    run = Run()
    run.call(10, "w0.s0.0", "acquire", "ok", True, ("SET", K, "a", "NX", "PX", "10000"))
    run.line(50, "127.0.0.1:9999", "ECHO", "leasecheck:fault:0:evict:start")
    # A plain SET succeeds whether or not w0's claim had been evicted: it proves nothing.
    run.call(100, "w1.s0.0", "acquire", "ok", True, ("SET", K, "b", "PX", "10000"))
    result = run.check()
    assert result["foreign_releases"] == 0 and result["claims"]["unknown"] == 1
    assert result["valid"] == "unknown"


def test_a_release_that_found_nothing_is_classified_by_the_three_outcomes():
    cas = "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end return 0"
    run = Run()
    run.call(10, "w0.s0.0", "acquire", "ok", True, ("SET", K, "a", "NX", "PX", "100"))   # expires 111 ms
    run.line(12, "127.0.0.1:9999", "TIME")   # (the store ran on: each expiry counts from its line, no later)
    run.call(200, "w0.s0.0", "release", "ok", False, (("EVAL", cas, "1", K, "a"), [("get", K)]))  # absent
    run.call(300, "w1.s0.0", "acquire", "ok", True, ("SET", K, "b", "NX", "PX", "100"))  # expires 401 ms
    run.line(302, "127.0.0.1:9999", "TIME")
    run.call(420, "w2.s0.0", "acquire", "ok", True, ("SET", K, "c", "NX", "PX", "100"))  # C holds it
    run.call(450, "w1.s0.0", "release", "ok", False, (("EVAL", cas, "1", K, "b"), [("get", K)]))  # differs
    result = run.check()
    assert result["releases_found_nothing"] == 2 and result["disagreements"] == []
    assert result["releases_found_nothing_outcomes"] == {"key_absent": 1, "token_differs": 1, "unknown": 0}
    assert result["releases_found_nothing_first"] == [      # named with their job, in history order
        {"attempt": "w0.s0.0", "key": K, "time_s": 0.2, "outcome": "key_absent"},
        {"attempt": "w1.s0.0", "key": K, "time_s": 0.45, "outcome": "token_differs"}]


def test_a_create_fed_just_before_the_store_stopped_ran_after_it_resumed():
    """Redis 6.2 feeds a command to MONITOR before it runs it. Stopped in between (a pause of the
    store), the store ran w1's SET NX a second later than its line says, after w0's claim had
    expired, and answered 1. Its slack (the second until the next line) lets the reply decide:
    w1 created a claim, and its own release of it is no foreign release of w0's."""
    for slack_seen in (True, False):
        run = Run()
        run.call(10, "w0.s0.0", "acquire", "ok", True, ("SET", K, "a", "NX", "PX", "1000"))   # expires 1011
        run.call(500, "w1.s0.0", "acquire", "ok", True, ("SET", K, "b", "NX", "PX", "5000"))  # logged 501
        if slack_seen:   # the store stopped at 501 ms, resumed at 1501 ms: the next line is then
            run.call(1500, "w1.s0.0", "release", "ok", True,
                     (("EVALSHA", "sha", "1", K, "b"), [("get", K), ("del", K)]))
        else:            # without the stop, no slack: a reply 510 ms from the expiry is a contradiction
            run.call(502, "w1.s0.0", "release", "ok", True,
                     (("EVALSHA", "sha", "1", K, "b"), [("get", K), ("del", K)]))
        result = run.check()
        if slack_seen:
            assert result["foreign_releases"] == 0 and result["disagreements"] == [], result
            assert result["claims"]["released_by_holder"] == 1 and result["valid"] is True, result
            assert result["expiry_edge"]["count"] == 1
            assert "-510.0 ms from the expiry" in result["expiry_edge"]["examples"][0]
        else:
            assert result["valid"] is not True and result["disagreements"], result


def test_a_claim_created_just_before_the_store_stopped_expires_later_than_its_line_says():
    """w0's SET NX PX 500 was fed at 11 ms, then the store stopped until 1011 ms and ran it: its
    claim lives to about 1511 ms, not 511. w1's create, logged at 1012 ms and answered 0, found it
    present: no claim of w1's, no disagreement, and w0's release at 1301 ms removes its own claim
    (the claim's expiry is in doubt by the second its command waited). Without the stop — the next
    line 1 ms after w0's SET — the same reply 501 ms past the expiry is a contradiction."""
    for stopped in (True, False):
        run = Run()
        run.call(10, "w0.s0.0", "acquire", "ok", True, ("SET", K, "a", "NX", "PX", "500"))     # logged 11
        if not stopped:
            run.line(12, "127.0.0.1:9999", "PING")
        run.call(1011, "w1.s0.0", "acquire", "ok", False, ("SET", K, "b", "NX", "PX", "500"))  # 1012
        run.call(1300, "w0.s0.0", "release", "ok", True,
                 (("EVALSHA", "sha", "1", K, "a"), [("get", K), ("del", K)]))
        result = run.check()
        if stopped:
            assert result["disagreements"] == [] and result["foreign_releases"] == 0, result
            assert result["claims"]["released_by_holder"] == 1 and result["claims_seen"]["count"] == 1, result
            assert result["valid"] is True, result
        else:
            assert result["disagreements"] and result["valid"] is not True, result


def test_a_delete_by_name_after_a_create_the_store_ran_late_is_its_own_release():
    """As above with a release that deletes by name. w1's SET, fed at 601 ms, ran when the store
    resumed at 1050 ms (after w0's claim expired at 1011) and answered 1; its DEL at 1101 ms,
    answered 1, removed w1's own claim. Read at the SET's line time, w0's claim was still live,
    and the DEL's 1 (a delete by name proves the key was there) made it w1's foreign release of
    w0's claim: the false foreign release this slack prevents."""
    run = Run()
    run.call(10, "w0.s0.0", "acquire", "ok", True, ("SET", K, "a", "NX", "PX", "1000"))   # expires 1011
    run.call(600, "w1.s0.0", "acquire", "ok", True, ("SET", K, "b", "NX", "PX", "5000"))  # logged 601
    run.call(1100, "w1.s0.0", "release", "ok", True, ("DEL", K))                          # logged 1101
    result = run.check()
    assert result["foreign_releases"] == 0 and result["disagreements"] == [], result
    assert result["claims"]["released_by_holder"] == 1 and result["valid"] is True, result


def test_a_store_stop_in_a_saved_run_is_read_from_the_slack_of_the_line_before_it():
    """tests/checkers/data/store-pause-late-create-ok (written by hand, token-cas, TTL 1 s): w0
    claims at 11 ms; w1's SET, fed at 501 ms, waited in the stopped store until 1.5 s and won (w0's
    claim had expired at 1.011 s). w0's release at 1.601 s finds w1's claim; w1's release at 2.301 s
    removes its own (alive until about 2.5 s, though its line says 1.501 s). Nothing foreign,
    nothing the audit and the clients disagree on; w0's release that found nothing is "unknown"
    (the expiry it met is in doubt by the stop)."""
    from leasecheck.checkers import check_run
    r = check_run(Path(__file__).parent / "data" / "store-pause-late-create-ok")
    assert r["valid"] is True and r["disagreements"] == [] and r["foreign_releases"] == 0, r["reasons"]
    assert r["claims"]["released_by_holder"] == 1 and r["claims"]["expired_while_held"] == 1
    assert r["releases_found_nothing_outcomes"] == {"key_absent": 0, "token_differs": 0, "unknown": 1}
    assert [e.split(" ran ")[1].split(" ms")[0] for e in r["expiry_edge"]["examples"]] == ["-510.0", "+800.0"]


def test_a_write_that_keeps_the_expiry_keeps_its_doubt():
    """w0's claim got its expiry from a SET the store ran up to 1.5 s late (its line at 11 ms, the
    next at 1500 ms): it may expire up to then after 2011 ms. w1's SET ... KEEPTTL at 1500 ms
    replaces it (a foreign release) and keeps that expiry — with its doubt, not that of its own
    line (the next line 1 ms later). w2's create at 2600 ms, answered 0, found w1's claim there:
    no disagreement."""
    run = Run()
    run.call(10, "w0.s0.0", "acquire", "ok", True, ("SET", K, "a", "NX", "PX", "2000"))    # logged 11
    run.call(1499, "w1.s0.0", "acquire", "ok", True, ("SET", K, "b", "KEEPTTL"))           # 1500
    run.line(1501, "127.0.0.1:9999", "TIME")
    run.call(2599, "w2.s0.0", "acquire", "ok", False, ("SET", K, "c", "NX", "PX", "500"))  # 2600
    result = run.check()
    assert result["disagreements"] == [] and result["foreign_releases"] == 1, result
    assert result["claims_seen"]["count"] == 2, result
