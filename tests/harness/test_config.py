import pytest

from leasecheck.harness.settings.config import RunConfig, short_lease_name
from leasecheck.harness.run.preflight import validate
from leasecheck.harness.errors import UsageError


def test_validate_fills_seed_prefix_and_store():
    cfg = validate(RunConfig())
    assert isinstance(cfg.seed, int)
    assert cfg.key_prefix.startswith("leasecheck:") and cfg.key_prefix.endswith(":")
    assert cfg.store_bin and cfg.ttl_ms == 1000
    assert cfg.job_keys() == [f"{cfg.key_prefix}job:0"]


def test_round_trip_through_json(tmp_path):
    cfg = validate(RunConfig(lease="naive-del", seed=5, jobs=3))
    cfg.save(tmp_path / "config.json")
    back = RunConfig.load(tmp_path / "config.json")
    assert back.job_keys() == cfg.job_keys() and back.seed == 5 and back.lease == "naive-del"


def test_store_url_is_parsed_and_excludes_embedded_options():
    cfg = validate(RunConfig(store_url="redis://127.0.0.1:6390/2"))
    assert (cfg.store_host, cfg.store_port, cfg.store_db) == ("127.0.0.1", 6390, 2)
    with pytest.raises(UsageError, match="does not manage"):
        validate(RunConfig(store_url="redis://127.0.0.1:6390/0", store_bin="/bin/true"))


@pytest.mark.parametrize("field,value,words", [
    ("slots", 0, "--slots"), ("jobs", 0, "--jobs"), ("time_limit_s", 0, "--time-limit"),
    ("client_retries", -1, "--client-retries"), ("retry_delay", "soon", "--retry-delay"),
    ("call_timeout_s", 0.0, "--call-timeout"), ("max_hold_s", 0.0, "--max-hold"),
    ("liveness", "loud", "--liveness loud: one of fail, warn"),
])
def test_each_bad_value_is_named(field, value, words):
    with pytest.raises(UsageError, match=words):
        validate(RunConfig(**{field: value}))


@pytest.mark.parametrize("lease,name", [
    ("token-cas", "token-cas"),
    ("examples/my_lease.py:MyLease", "my_lease-MyLease"),
    ("/home/ci/src/leases/my_lease.py:MyLease", "my_lease-MyLease"),
    ("acme.locks.my_lease:MyLease", "my_lease-MyLease"),
    ("odd dir/we ird.py:K", "we_ird-K"),
])
def test_plugin_leases_get_a_short_run_directory_name(lease, name):
    assert short_lease_name(lease) == name
    assert RunConfig(lease=lease).scenario == name
    assert RunConfig(lease=lease, name="nightly").scenario == "nightly"
