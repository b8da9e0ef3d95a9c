"""The lease contract's declarations: ``connect = "url"`` and ``async def`` calls, read by the
loader (a class that mixes them is refused with one line naming the fix) and by the worker."""
import pytest

from leasecheck.harness.errors import UsageError
from leasecheck.workloads.leases import contract, load_lease


class Sync:
    def __init__(self, client, key, ttl_ms): ...
    def acquire(self): return True
    def release(self): return True


class Async:
    connect = "url"
    def __init__(self, url, key, ttl_ms): ...
    async def acquire(self): return True
    async def release(self): return True
    async def renew(self): return True


class AsyncOnAClient(Async):
    connect = "client"


class Mixed(Async):
    def renew(self): return True


class BadConnect(Sync):
    connect = "socket"


class UrlOfSeveralNodes(Sync):
    connect = "url"
    nodes = "all"


def test_what_a_lease_declares_is_read():
    assert not contract.wants_url(Sync) and not contract.is_async(Sync)
    assert contract.wants_url(Async) and contract.is_async(Async)
    contract.check(Sync, "s")
    contract.check(Async, "a")


@pytest.mark.parametrize("cls, words", [
    (AsyncOnAClient, 'declare connect = "url" and build an asyncio client'),
    (Mixed, "mixes async def acquire, release with plain renew"),
    (BadConnect, "connect = 'socket'"),
    (UrlOfSeveralNodes, 'drop connect = "url"'),
])
def test_a_class_whose_declarations_do_not_fit_is_refused_in_one_line(cls, words):
    with pytest.raises(UsageError) as e:
        contract.check(cls, f"x.py:{cls.__name__}")
    assert words in str(e.value) and "\n" not in str(e.value)


def test_the_loader_checks_the_contract_and_the_builtins_pass_it():
    with pytest.raises(UsageError, match="mixes async def"):
        load_lease("tests.workloads.test_lease_contract:Mixed")
    cls = load_lease("redis-asyncio-lock")
    assert contract.is_async(cls) and contract.wants_url(cls)
    cls = load_lease("examples/async_lease.py:AsyncNaiveDel")
    assert contract.is_async(cls) and contract.wants_url(cls)
    assert not contract.is_async(load_lease("token-cas"))
