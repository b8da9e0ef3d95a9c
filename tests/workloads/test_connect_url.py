"""The ``connect`` attribute of a lease: ``"url"`` builds it with its slot's URL; anything else
but ``"client"`` is refused before a run starts, naming the fix."""
import pytest

from leasecheck.harness.errors import UsageError
from leasecheck.workloads.leases import load_lease, wants_url


def _plugin(tmp_path, body: str) -> str:
    path = tmp_path / "lease.py"
    path.write_text("class L:\n" + body + "\n    def __init__(self, *a): pass\n"
                    "    def acquire(self): return True\n    def release(self): return True\n")
    return f"{path}:L"


def test_the_examples_ask_for_a_url_and_the_old_leases_do_not():
    assert wants_url(load_lease("examples/own_client.py:ValkeyOwnClient"))
    assert wants_url(load_lease("examples/own_client.py:RedisPyOwnClientDel"))
    assert not wants_url(load_lease("examples/own_client.py:ValkeyFromHandedClient"))
    assert not wants_url(load_lease("token-cas"))


def test_connect_client_is_the_default_spelled_out(tmp_path):
    assert not wants_url(load_lease(_plugin(tmp_path, '    connect = "client"')))


@pytest.mark.parametrize("value", ['"URL"', '"redis"', "True"])
def test_any_other_connect_is_refused_naming_the_fix(tmp_path, value):
    with pytest.raises(UsageError) as e:
        load_lease(_plugin(tmp_path, f"    connect = {value}"))
    assert 'declare connect = "url"' in str(e.value) and "\n" not in str(e.value)


def test_a_url_lease_cannot_ask_for_every_node(tmp_path):
    with pytest.raises(UsageError) as e:
        load_lease(_plugin(tmp_path, '    connect = "url"\n    nodes = "all"'))
    assert 'drop connect = "url"' in str(e.value)
