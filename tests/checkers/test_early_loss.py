"""Early loss from the claims and the lease calls: the deadline runs from the acquire's (or the
latest renewal's) invocation; causes come from what the store did to the claim."""
from test_claims_model import K, Run


def _run(ttl_ms):
    run = Run()
    run.events[0]["config"] = {"key_prefix": "lc:", "ttl_ms": ttl_ms, "max_overlap": None}
    return run


def _holder_and_newcomer(run, px_a, newcomer_ms, renew_ms=None):
    run.call(10, "w0.s0.0", "acquire", "ok", True, ("SET", K, "a", "NX", "PX", str(px_a)))
    run.job(13, "w0.s0.0", "job_start")
    if renew_ms is not None:
        run.call(renew_ms, "w0.s0.0", "renew", "ok", True, ("PEXPIRE", K, "1000"))
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
