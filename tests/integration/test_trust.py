"""A VALID must be earned: leases we did not write — a claim under a namespaced key, a MULTI/EXEC
acquire, an acquire that claims nothing — judged on what the store really did."""
import json

import pytest

pytestmark = pytest.mark.integration

LEASES = "tests/integration/foreign_leases.py:"
# Seed 9027 gives every slot a long job (1.6 s under the 1 s lease) within its first three jobs.
RUN = ("run", "--time-limit", "8", "--seed", "9027", "--lease")


def test_delete_by_name_on_a_namespaced_key_is_caught(leasecheck):
    r = leasecheck(*RUN, LEASES + "NamespacedDel")
    res = r.results
    assert r.code == 1, r.out + r.err
    assert res["foreign_releases"] > 0
    assert "app-locks:" in res["reasons"][0] and "app-locks:" in res["witness"]["markdown"]
    assert res["claims_seen"]["count"] > 0 and res["claims_seen"]["examples"][0].startswith("app-locks:")


def test_compare_and_delete_on_a_namespaced_key_is_valid_on_evidence(leasecheck):
    r = leasecheck(*RUN, LEASES + "NamespacedCas")
    res = r.results
    assert r.code == 0, r.out + r.err
    assert res["foreign_releases"] == 0 and res["claims_seen"]["count"] > 0
    assert res["disagreements"] == []
    assert "seen in the store" in r.out


def test_transaction_acquire_with_delete_by_name_is_caught(leasecheck):
    r = leasecheck(*RUN, LEASES + "TransactionDel")
    assert r.code == 1, r.out + r.err
    assert r.results["foreign_releases"] > 0 and r.results["disagreements"] == []


def test_transaction_acquire_with_compare_and_delete_is_valid_without_disagreement(leasecheck):
    r = leasecheck(*RUN, LEASES + "TransactionCas")
    res = r.results
    assert r.code == 0, r.out + r.err
    assert res["disagreements"] == [] and res["claims_seen"]["count"] > 0
    assert res["audit"]["unattributed"] < 100     # the harness's own admin lines only


def test_a_transaction_the_store_refuses_is_joined_exactly(leasecheck):
    r = leasecheck("run", "--time-limit", "3", "--lease", LEASES + "TransactionRefused")
    res = r.results
    assert res["disagreements"] == [], res["disagreements"][:3]
    assert not any("different command" in x for x in res["reasons"])
    assert r.code == 2 and res["claims_seen"]["count"] == 0          # no claim: never valid


def test_an_acquire_that_claims_nothing_is_inconclusive_with_the_reason(leasecheck):
    r = leasecheck("run", "--time-limit", "3", "--lease", LEASES + "ClaimsNothing")
    assert r.code == 2, r.out + r.err
    why = " ".join(r.results["reasons"])
    assert "reported a win that the store's audit does not show as a claim" in why
    assert "the audit shows GET" in why and "INCONCLUSIVE" in r.out


def test_a_lease_whose_constructor_raises_is_inconclusive_naming_the_exception(leasecheck):
    r = leasecheck("run", "--time-limit", "3", "--lease", LEASES + "RaisingConstructor")
    assert r.code == 2, r.out + r.err
    [why] = [x for x in r.results["reasons"] if "the lease raised on every attempt" in x]
    seen = r.results["exceptions"]
    assert "RuntimeError: boom" in why and seen["first"]["attempt"] in why and "constructor" in why
    assert seen["count"] > 0 and seen["by_type"] == {"RuntimeError": seen["count"]}
    assert seen["first"]["type"] == "RuntimeError" and seen["first"]["message"] == "boom"
    assert "raised by the lease" in r.out and "INCONCLUSIVE" in r.out


def test_keys_a_lease_makes_outside_the_run_prefix_are_removed_from_a_shared_store(leasecheck, store):
    """On a store the harness does not own, the run removes the keys its leases made — a
    library's `lock:` and `lock-signal:` keys, a namespaced key — and nothing else."""
    import redis

    r = redis.Redis(host=store.host, port=store.port)
    r.set("someone-else:job:0", "theirs")
    r.set("app-locks:someone-else", "theirs")
    url = f"redis://{store.host}:{store.port}/0"
    for lease in ("python-redis-lock", LEASES + "NamespacedCas"):
        out = leasecheck("run", "--time-limit", "2", "--store-url", url, "--lease", lease)
        assert out.code == 0, out.out + out.err
        prefix = json.loads((out.run_dir / "config.json").read_text())["key_prefix"]
        assert [k for k in r.scan_iter(match=f"*{prefix}*")] == [], lease
    assert r.get("someone-else:job:0") == b"theirs" and r.get("app-locks:someone-else") == b"theirs"
