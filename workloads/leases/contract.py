"""What a lease class declares beyond ``acquire``/``release``: what it is handed, and whether its
calls are coroutines. Read by the loader (to refuse a class that mixes them) and by the worker (to
pick the claim loop and what to hand the constructor).

``connect = "url"``: the constructor receives the slot's URL (``redis://127.0.0.1:<port>/<db>``,
``leasecheck.harness.run.slot_url``) instead of a redis-py client, and the lease builds its own
client of any library from it. Without it (or ``connect = "client"``) it receives the harness's
audited redis-py client, as before.

``async def acquire/release/renew``: the lease runs as one asyncio task per slot on one event
loop per worker process (``leasecheck.workloads.async_claim_loop``). An asynchronous lease builds
its own asyncio client, so it must declare ``connect = "url"``; its methods are all coroutines or
none is.
"""
from __future__ import annotations

import inspect

from leasecheck.harness.errors import UsageError

URL = "url"
CLIENT = "client"
METHODS = ("acquire", "release", "renew")


def wants_url(cls) -> bool:
    """Whether the lease is handed its slot's URL rather than a client."""
    return getattr(cls, "connect", CLIENT) == URL


def is_async(cls) -> bool:
    """Whether the lease's calls are coroutines (``async def acquire``)."""
    return inspect.iscoroutinefunction(getattr(cls, "acquire", None))


def check(cls, spec: str) -> None:
    """Refuse, naming the fix, a class whose declarations do not fit together."""
    name = getattr(cls, "__name__", spec)
    connect = getattr(cls, "connect", CLIENT)
    if connect not in (CLIENT, URL):
        raise UsageError(f"--lease {spec}: {name}.connect = {connect!r}; declare connect = \"url\" to be handed "
                         "the slot's URL, or leave it out to be handed a redis-py client")
    present = [m for m in METHODS if callable(getattr(cls, m, None))]
    coroutines = [m for m in present if inspect.iscoroutinefunction(getattr(cls, m))]
    if coroutines and len(coroutines) != len(present):
        plain = [m for m in present if m not in coroutines]
        raise UsageError(f"--lease {spec}: {name} mixes async def {', '.join(coroutines)} with plain "
                         f"{', '.join(plain)}; make all of acquire/release/renew async def, or none")
    if coroutines and connect != URL:
        raise UsageError(f"--lease {spec}: {name} is asynchronous and would be handed a synchronous redis-py "
                         "client; declare connect = \"url\" and build an asyncio client from the URL "
                         "(redis.asyncio.from_url(url))")
    if connect == URL and getattr(cls, "nodes", None) == "all":
        raise UsageError(f"--lease {spec}: {name} declares both connect = \"url\" and nodes = \"all\"; a lease of "
                         "several nodes is handed one client per node: drop connect = \"url\"")
