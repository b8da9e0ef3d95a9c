"""Lease implementations under test, and the loader for user plugins.

The contract every lease follows (built-in or plugin)::

    lease = Name(client, key, ttl_ms)   # one object per claim attempt
    lease.acquire() -> bool             # True: this attempt now holds the claim
    lease.release() -> bool             # True: it deleted its own claim
    lease.renew() -> bool               # optional; True: the claim was extended
    lease.fence                         # optional; after acquire: the claim's fencing token
    Name.check_ttl(ttl_ms)              # optional, static; raises ValueError (naming the fix)
                                        # when the lease cannot keep that TTL exactly
    Name.check_server(version)          # optional, static; raises ValueError (naming the fix) when
                                        # the store's `--version` line ("" if not known) lacks a
                                        # command the lease needs

``client`` is a redis-py client the harness built; an exception from any call means that
call's outcome is unknown.

A lease that brings its own client — another Python client library, a client configured its own
way — declares ``connect = "url"`` and is then built with its slot's URL instead of a client::

    lease = Name(url, key, ttl_ms)      # url: "redis://127.0.0.1:<the slot's port>/<db>"

For example, a complete lease on valkey-py::

    import secrets
    import valkey

    class MyValkeyLease:
        connect = "url"

        def __init__(self, url, key, ttl_ms):
            self.client = valkey.Valkey.from_url(url)
            self.key, self.ttl_ms = key, ttl_ms
            self.token = secrets.token_urlsafe(16)

        def acquire(self) -> bool:
            return bool(self.client.set(self.key, self.token, nx=True, px=self.ttl_ms))

        def release(self) -> bool:
            return self.client.eval("if redis.call('get', KEYS[1]) == ARGV[1] then "
                                    "return redis.call('del', KEYS[1]) end return 0",
                                    1, self.key, self.token) == 1

The port is the slot's own on the wire path (``leasecheck.harness.record.wire``): the worker
forwards every connection made to it to the store and numbers each command on the way, so any
library is attributed as the harness's own client is (docs/history.md, "The wire path"). The
handed client shows that port as its own address too (``connection_pool.connection_kwargs``),
so a lease handed a client that builds a second library's client from its host and port is
attributed as well. ``connect = "url"`` serves one store (``--topology single``); the URL comes
from ``leasecheck.harness.run.slot_url.slot_url``. ``examples/own_client.py`` has such leases on
redis-py and valkey-py. A lease without ``connect`` (or ``connect = "client"``) is built as before.

A lease that needs every store node (``--topology redlock``) declares it with a class attribute
and then receives a list of clients, one per node in node order, instead of one::

    class MyRedlock:
        nodes = "all"
        def __init__(self, clients, key, ttl_ms): ...   # clients[0] talks to node1, ...

Every client's connections are audited and named after their node, so the checker knows which
node each command went to. Under ``--topology redlock`` a lease without ``nodes = "all"`` is
refused; under ``single`` it gets a list of one client. Built in: ``redlock``, ``pottery-redlock-n``.

A lease whose library sends a call's commands from threads of its own, and may return before
they are all out, runs those threads' work in a copy of the calling thread's context
(``contextvars.copy_context().run``): the harness then credits a command sent after the call
returned to that call (``late_sent``; ``pottery_redlock.py`` shows how).

A lease may build its own client of any library: it declares ``connect = "url"`` and is handed
its slot's URL (``redis://127.0.0.1:<port>/<db>``) instead of a client. It may be asynchronous
(``async def acquire/release/renew``, with ``connect = "url"``): it then runs as one asyncio task
per slot, all of a worker's slots on one event loop (``contract``; built in:
``redis-asyncio-lock``)::

    class MyAsyncLease:
        connect = "url"
        def __init__(self, url, key, ttl_ms): self.r = redis.asyncio.from_url(url) ...
        async def acquire(self) -> bool: ...
        async def release(self) -> bool: ...

A lease in another language is ``exec:COMMAND ARGS...``: a child process per slot speaking a line
protocol on stdin/stdout (``exec_lease``; built in: the Node.js examples ``node-ioredis-del`` and
``node-redlock``, from ``examples/node/`` of a source checkout).
"""
from __future__ import annotations

import importlib
import importlib.util
import sys
import traceback
from pathlib import Path

from leasecheck.harness.errors import UsageError
from leasecheck.workloads.leases import contract, exec_lease

BUILTIN = {
    "naive-del": "leasecheck.workloads.leases.naive_del:NaiveDel",
    "get-compare-del": "leasecheck.workloads.leases.get_compare_del:GetCompareDel",
    "fixed-token": "leasecheck.workloads.leases.fixed_token:FixedToken",
    "token-cas": "leasecheck.workloads.leases.token_cas:TokenCas",
    "token-cas-renew": "leasecheck.workloads.leases.token_cas_renew:TokenCasRenew",
    "token-cas-ifeq": "leasecheck.workloads.leases.token_cas_ifeq:TokenCasIfeq",
    "token-cas-fenced": "leasecheck.workloads.leases.token_cas_fenced:TokenCasFenced",
    "redis-py-lock": "leasecheck.workloads.leases.redis_py_lock:RedisPyLock",
    "python-redis-lock": "leasecheck.workloads.leases.python_redis_lock:PythonRedisLock",
    "python-redis-lock-renew": "leasecheck.workloads.leases.python_redis_lock:PythonRedisLockRenew",
    "pottery-redlock": "leasecheck.workloads.leases.pottery_redlock:PotteryRedlock",
    "pottery-redlock-n": "leasecheck.workloads.leases.pottery_redlock:PotteryRedlockN",
    "redlock": "leasecheck.workloads.leases.redlock:Redlock",
    "redis-asyncio-lock": "leasecheck.workloads.leases.redis_asyncio_lock:RedisAsyncioLock",
    # Node.js, from the repository's examples/node (npm install there first)
    "node-ioredis-del": "exec:node examples/node/ioredis_del.js",
    "node-redlock": "exec:node examples/node/redlock_lease.js",
}
# The folder a built-in exec: lease's script paths are relative to (a source checkout's root).
ROOT = Path(__file__).resolve().parents[2]


wants_url = contract.wants_url   # the lease declares connect = "url": built with its slot's URL


def _users_frames(e: BaseException) -> str:
    """The traceback of a plugin's own import error without the frames of the loading machinery
    (importlib, this module): what is left is the user's code."""
    frames = [f for f in traceback.extract_tb(e.__traceback__)
              if f.filename != __file__ and not f.filename.startswith("<frozen") and "importlib" not in f.filename]
    lines = ["Traceback (most recent call last):\n", *traceback.format_list(frames),
             *traceback.format_exception_only(type(e), e)]
    return "".join(lines).rstrip()


def load_lease(spec: str):
    """The lease class for a built-in name, ``path/to/file.py:Name``, ``package.module:Name`` or
    ``exec:COMMAND ARGS...``."""
    target = BUILTIN.get(spec, spec)
    if target.startswith(exec_lease.PREFIX):
        return exec_lease.lease_class(target, base=ROOT, name=spec) if spec in BUILTIN else \
            exec_lease.lease_class(target)
    if ":" not in target:
        raise UsageError(f"--lease {spec!r} is not a known lease; pick one of "
                         f"{', '.join(BUILTIN)} or give FILE.py:Class / package.module:Class / 'exec:COMMAND ARGS'")
    where, _, name = target.rpartition(":")
    try:
        if where.endswith(".py"):
            path = Path(where)
            if not path.is_file():
                raise UsageError(f"--lease {spec}: no such file {where}")
            mod_name = f"leasecheck_plugin_{path.stem}"
            module_spec = importlib.util.spec_from_file_location(mod_name, path.resolve())
            module = importlib.util.module_from_spec(module_spec)
            sys.modules[mod_name] = module
            module_spec.loader.exec_module(module)
        else:
            module = importlib.import_module(where)
    except UsageError:
        raise
    except ModuleNotFoundError as e:
        if e.name and (where == e.name or where.startswith(e.name + ".")):
            raise UsageError(f"--lease {spec}: no module named {where!r} (looked on the Python path; give "
                             "package.module:Class of an installed module, or FILE.py:Class)") from None
        raise UsageError(f"--lease {spec}: the plugin failed to import; its traceback:\n{_users_frames(e)}") from None
    except Exception as e:
        raise UsageError(f"--lease {spec}: the plugin failed to import; its traceback:\n{_users_frames(e)}") from None
    cls = getattr(module, name, None)
    if cls is None:
        raise UsageError(f"--lease {spec}: {where} has no attribute {name!r}")
    for method in ("acquire", "release"):
        if not callable(getattr(cls, method, None)):
            raise UsageError(f"--lease {spec}: {name} has no {method}() method; a lease needs "
                             "acquire() -> bool and release() -> bool")
    contract.check(cls, spec)
    return cls
