"""Claims on whatever keys the lease writes, transactions joined exactly, and no VALID without
evidence that the claims existed in the store."""
from test_claims_model import K, S0, Run

D = "app-locks:" + K          # a key of the lease's own making, outside the run's prefix


def test_a_delete_by_name_on_a_derived_key_is_a_foreign_release_named_on_that_key():
    run = Run()
    run.call(10, "w0.s0.0", "acquire", "ok", True, ("SET", D, "a", "NX", "PX", "100"))
    run.job(12, "w0.s0.0", "job_start")
    run.call(150, "w1.s0.0", "acquire", "ok", True, ("SET", D, "b", "NX", "PX", "100"))
    run.job(152, "w1.s0.0", "job_start")
    run.call(180, "w0.s0.0", "release", "ok", True, ("DEL", D))     # deletes w1's claim
    run.job(179, "w0.s0.0", "job_end")
    result = run.check()
    assert result["valid"] is False and result["foreign_releases"] == 1
    assert D in result["reasons"][0]
    assert f"`{D}`" in result["witness"]["markdown"]
    assert result["claims_seen"] == {"count": 2, "keys": 1, "examples": [D]}


def test_compare_and_delete_on_a_derived_key_is_valid_with_claims_seen():
    run = Run()
    cas = lambda tok: (("EVAL", "cas", "1", D, tok), [("get", D)])
    run.call(10, "w0.s0.0", "acquire", "ok", True, ("SET", D, "a", "NX", "PX", "100"))
    run.call(150, "w1.s0.0", "acquire", "ok", True, ("SET", D, "b", "NX", "PX", "100"))
    run.call(180, "w0.s0.0", "release", "ok", False, cas("a"))        # found w1's claim: no delete
    result = run.check()
    assert result["valid"] is True and result["foreign_releases"] == 0
    assert result["claims"]["expired_after_job"] == 1 and result["claims"]["still_held"] == 1
    assert result["releases_found_nothing_outcomes"]["token_differs"] == 1
    assert result["disagreements"] == [] and result["claims_seen"]["count"] == 2


def test_keys_only_other_clients_or_sinks_write_are_not_claims():
    run = Run()
    run.call(10, "w0.s0.0", "acquire", "ok", True, ("SET", D, "a", "NX", "PX", "10000"))
    extra = [f'{S0 + 0.1:.6f} [0 10.0.0.9:1] "SET" "someone-else:job" "x" "NX"',
             f'{S0 + 0.2:.6f} [0 10.0.0.9:1] "DEL" "someone-else:job"']
    result = run.check(extra=extra)
    assert result["claims_seen"]["count"] == 1 and result["valid"] is True


def test_a_side_key_the_lease_keeps_beside_its_claim_is_no_problem():
    """python-redis-lock's release deletes and re-fills a signal list beside the claim."""
    run = Run()
    sig = "lock-signal:" + K
    run.call(10, "w0.s0.0", "acquire", "ok", True, ("SET", "lock:" + K, "a", "NX", "EX", "10"))
    run.call(50, "w0.s0.0", "release", "ok", True,
             (("EVALSHA", "sha", "2", "lock:" + K, sig, "a"),
              [("get", "lock:" + K), ("del", sig), ("rpush", sig, "1"), ("pexpire", sig, "1000"),
               ("del", "lock:" + K)]))
    result = run.check()
    assert result["valid"] is True and result["claims"]["released_by_holder"] == 1
    assert result["problems"] == [] and result["disagreements"] == []


def test_an_acquire_that_wins_without_creating_anything_is_inconclusive():
    run = Run()
    run.call(10, "w0.s0.0", "acquire", "ok", True, ("SET", K, "a", "NX", "PX", "10000"))
    run.call(50, "w1.s0.0", "acquire", "ok", True, ("GET", "elsewhere"))   # claims to have won
    result = run.check()
    assert result["valid"] == "unknown"
    why = " ".join(result["reasons"])
    assert "w1.s0.0 acquire at 0.050 s reported a win; the audit shows GET elsewhere" in why


def test_no_claim_seen_is_never_valid():
    run = Run()
    run.call(10, "w0.s0.0", "acquire", "fail", False, ("GET", K))
    result = run.check()
    assert result["valid"] == "unknown" and result["claims_seen"]["count"] == 0
    assert any("no claim was seen in the store" in r for r in result["reasons"])


# -- transactions ------------------------------------------------------------------------------

class TxnRun(Run):
    def txn(self, ms, attempt, f, kind, value, queued, how):
        """One call sending MULTI, `queued`, EXEC (or DISCARD); the audit lists what ran, as
        `how` says: "inside" (Redis 6.2: between MULTI and EXEC), "after" (after the EXEC),
        "aborted" / "discarded" (none of them)."""
        slot = attempt.rsplit(".", 1)[0]
        conn = f"{slot}.c0"
        if slot not in self.seq:
            self.seq[slot] = [f"127.0.0.1:{6000 + len(self.seq)}", 0]
            self.line(0, self.seq[slot][0], "ECHO", "leasecheck:conn:" + conn)
        addr, first = self.seq[slot]
        end = "DISCARD" if how == "discarded" else "EXEC"
        names = ["MULTI"] + [q[0] for q in queued] + [end]
        sent = [[conn, first + i, n.upper()] for i, n in enumerate(names)]
        self.seq[slot][1] += len(names)
        self.line(ms + 1, addr, "MULTI")
        if how == "inside":
            for i, q in enumerate(queued):
                self.line(ms + 2 + i * 0.01, addr, *q)
        self.line(ms + 2.5, addr, end)
        if how == "after":
            for i, q in enumerate(queued):
                self.line(ms + 2.6 + i * 0.01, addr, *q)
        self.ev(ms, slot, "invoke", f=f, attempt=attempt, key=K)
        done = {"value": value} if kind != "info" else {"error": "EXECABORT"}
        self.ev(ms + 3, slot, kind, f=f, attempt=attempt, key=K, sent=sent, **done)


def _setnx_pexpire(tok):
    return [("SETNX", K, tok), ("PEXPIRE", K, "100")]


def test_transactions_are_joined_whichever_way_the_store_lists_them():
    for how in ("inside", "after"):
        run = TxnRun()
        run.txn(10, "w0.s0.0", "acquire", "ok", True, _setnx_pexpire("a"), how)
        run.job(14, "w0.s0.0", "job_start")
        run.txn(150, "w1.s0.0", "acquire", "ok", True, _setnx_pexpire("b"), how)
        run.job(154, "w1.s0.0", "job_start")
        run.txn(160, "w2.s0.0", "acquire", "fail", False, _setnx_pexpire("c"), how)   # w1 holds it
        run.call(180, "w0.s0.0", "release", "ok", True, ("DEL", K))     # w0's plain DEL: foreign
        run.job(179, "w0.s0.0", "job_end")
        result = run.check()
        assert result["disagreements"] == [] and result["audit"]["unattributed"] == 0, (how, result)
        assert result["foreign_releases"] == 1 and result["valid"] is False, how
        assert result["claims_seen"]["count"] == 2


def test_queued_commands_of_a_transaction_that_did_not_run_are_never_applied():
    for how in ("aborted", "discarded"):
        run = TxnRun()
        run.call(10, "w0.s0.0", "acquire", "ok", True, ("SET", K, "a", "NX", "PX", "10000"))
        # w1's transaction would overwrite w0's claim, but it never ran
        run.txn(50, "w1.s0.0", "acquire", "info", None, [("SET", K, "b"), ("PEXPIRE", K, "5")], how)
        run.call(80, "w1.s0.0", "release", "ok", False, ("GET", K))   # the next command on its connection
        result = run.check()
        assert result["disagreements"] == [] and result["audit"]["unattributed"] == 0, (how, result)
        assert result["foreign_releases"] == 0 and result["claims"]["still_held"] == 1, how
        assert result["valid"] is True, (how, result["reasons"])
