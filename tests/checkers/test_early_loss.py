"""Early loss from the claims and the lease calls: the deadline runs from the acquire's (or the
latest renewal's) invocation; causes come from what the store did to the claim."""
from test_claims_model import K, Run


def _run(ttl_ms):
    run = Run()
    run.events[0]["config"] = {"key_prefix": "lc:", "ttl_ms": ttl_ms, "max_overlap": None}
    return run


def _holder_and_newcomer(run, px_a, newcomer_ms, renew_ms=None, renew_px=1000):
    run.call(10, "w0.s0.0", "acquire", "ok", True, ("SET", K, "a", "NX", "PX", str(px_a)))
    run.job(13, "w0.s0.0", "job_start")
    if renew_ms is not None:
        run.call(renew_ms, "w0.s0.0", "renew", "ok", True, ("PEXPIRE", K, str(renew_px)))
    run.call(newcomer_ms, "w1.s0.0", "acquire", "ok", True, ("SET", K, "b", "NX", "PX", "1000"))
    run.job(newcomer_ms + 3, "w1.s0.0", "job_start")
    run.job(1500, "w0.s0.0", "job_end")
    run.job(1600, "w1.s0.0", "job_end")


def test_an_expiry_shorter_than_the_ttl_is_an_early_loss_of_the_lease_s_own_making():
    run = _run(1000)
    _holder_and_newcomer(run, px_a=300, newcomer_ms=400)    # the lease wrote PX 300 for a 1 s TTL
    r = run.check()
    assert r["valid"] is False and r["early_loss"]["by_cause"]["short_expiry"] == 1
    first = r["early_loss"]["first"][0]
    assert (first["holder"], first["newcomer"]) == ("w0.s0.0", "w1.s0.0")


def test_a_newcomer_after_the_deadline_is_an_ordinary_overlap():
    run = _run(300)
    _holder_and_newcomer(run, px_a=300, newcomer_ms=400)
    r = run.check()
    assert r["early_loss"]["count"] == 0 and r["overlap"]["count"] == 1 and r["valid"] is True


def test_a_renewal_moves_the_deadline():
    run = _run(1000)
    # renewed at 200 ms (deadline now ~1.2 s): a claim lost at 1.1 s is lost early...
    _holder_and_newcomer(run, px_a=1000, newcomer_ms=1100, renew_ms=200)
    r = run.check()
    assert r["early_loss"]["count"] == 1, r["early_loss"]
    # ... which without the renewal would be past the deadline (1.01 s): no early loss
    run = _run(1000)
    _holder_and_newcomer(run, px_a=1000, newcomer_ms=1100)
    assert run.check()["early_loss"]["count"] == 0


def test_a_renewal_after_the_store_clock_stepped_back_is_not_a_short_expiry():
    """The store's clock ran 1.8 s ahead when the claim was created (a clock fault), was set back
    before the renewal (the fault healed) and jumped 2.8 s ahead again before the newcomer came:
    the renewal's PEXPIRE 1000 is a full TTL from when it was written, though its expiry is
    earlier, on the store's clock, than the create's. The claim was lost to the clock, not to a
    short expiry the lease wrote (the holder's own deadline, 1.4 s, had not passed at 0.7 s)."""
    run = _run(1000)
    addr = "127.0.0.1:5000"
    run.line(0, addr, "ECHO", "leasecheck:conn:w0.s0.c0")
    run.ev(10, "w0.s0", "invoke", f="acquire", attempt="w0.s0.0", key=K)
    run.line(11 + 1800, addr, "SET", K, "a", "NX", "PX", "1000")
    run.ev(12, "w0.s0", "ok", f="acquire", attempt="w0.s0.0", key=K, value=True, sent=[["w0.s0.c0", 0, "SET"]])
    run.job(13, "w0.s0.0", "job_start")
    run.ev(400, "w0.s0", "invoke", f="renew", attempt="w0.s0.0", key=K)
    run.line(401, addr, "PEXPIRE", K, "1000")
    run.ev(402, "w0.s0", "ok", f="renew", attempt="w0.s0.0", key=K, value=True, sent=[["w0.s0.c0", 1, "PEXPIRE"]])
    run.seq["w0.s0"] = [addr, 2]
    run.call(700 + 2800, "w1.s0.0", "acquire", "ok", True, ("SET", K, "b", "NX", "PX", "1000"))
    for e in run.events[-2:]:                     # its SET on the store's clock, its call at 0.7 s
        e["time"] -= 2800 * 1_000_000
    run.job(703, "w1.s0.0", "job_start")
    run.job(1300, "w0.s0.0", "job_end")
    run.job(1600, "w1.s0.0", "job_end")
    r = run.check()
    assert r["early_loss"]["count"] == 1, r["early_loss"]
    assert r["early_loss"]["by_cause"]["clock_jump"] == 1 and r["early_loss"]["by_cause"]["short_expiry"] == 0
    assert r["failure_of"] == "store", r["reasons"]


def test_a_renewal_that_extended_another_attempt_s_claim_is_the_lease_s_missed_renewal():
    """Found by Hypothesis (tests/checkers/test_oracle.py): the holder's claim expired; another
    attempt claimed the key; the holder's renewal, a plain PEXPIRE by key name, then extended
    *that* claim and returned success. The holder's deadline runs from that renewal, so a
    newcomer before it is an early loss — but not the store's doing (it was once reported as a
    clock jump, and the run blamed on the store): the lease renewed a claim it no longer had."""
    run = _run(1000)
    run.call(10, "w0.s0.0", "acquire", "ok", True, ("SET", K, "a", "NX", "PX", "1000"))
    run.job(13, "w0.s0.0", "job_start")
    run.call(1050, "w2.s0.0", "acquire", "ok", True, ("SET", K, "c", "NX", "PX", "1000"))  # w0's expired at 1010
    run.call(1100, "w0.s0.0", "renew", "ok", True, ("PEXPIRE", K, "1000"))      # extends w2's claim
    run.call(1200, "w1.s0.0", "acquire", "ok", True, ("SET", K, "b", "PX", "1000"))
    run.job(1203, "w1.s0.0", "job_start")       # before w0's deadline as its renewal set it
    run.job(1500, "w0.s0.0", "job_end")
    run.job(1600, "w1.s0.0", "job_end")
    r = run.check()
    assert r["early_loss"]["count"] == 1, r["early_loss"]
    assert r["early_loss"]["by_cause"]["renewal_missed"] == 1 and r["early_loss"]["by_cause"]["clock_jump"] == 0
    assert r["early_loss"]["first"][0]["holder"] == "w0.s0.0"
    assert r["kept_alive"]["commands"] == 1       # the renewal kept w2's claim alive: the same mistake, seen there
    assert r["valid"] is False and r["failure_of"] == "lease"


def test_a_renewal_that_extended_the_holder_s_own_claim_is_not_a_missed_one():
    """The same renewal while the holder's claim was live extends it: a loss before the deadline
    it set keeps the cause its claim's fate gives (here the store's clock: nothing shortened it)."""
    run = _run(1000)
    # renewed at 500 ms, its own claim, shortened to 100 ms; the newcomer at 700 ms
    _holder_and_newcomer(run, px_a=1000, newcomer_ms=700, renew_ms=500, renew_px=100)
    r = run.check()
    assert r["early_loss"]["count"] == 1, r["early_loss"]
    assert r["early_loss"]["by_cause"]["renewal_missed"] == 0 and r["early_loss"]["by_cause"]["short_expiry"] == 1
