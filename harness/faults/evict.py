"""Memory pressure: squeeze the store's ``maxmemory`` under an ``allkeys-random`` policy and write
filler keys until it evicts — claim keys among them (a claim can be gone without its holder
releasing it). The old limit and policy are restored and the fillers deleted afterwards.

Evictions are invisible in the audit, so the nemesis marks the window with ``ECHO`` markers and
the checker treats claims live in it as ones that may vanish silently.

Measured while it acts: ``evicted_keys`` (``INFO stats`` before and after) and, from the store's
own ``evicted`` keyspace notifications, how many of the evicted keys were not the fault's fillers
(``evicted_run_keys``: claim keys, the lease's other keys) with a few names — keys the workers
lost without a release.
"""
from __future__ import annotations

import threading
import time

import redis

from leasecheck.harness.errors import UsageError
from leasecheck.harness.faults.base import Active, Fault, FaultContext, Step
from leasecheck.harness.nemesis.heal import undoes
from leasecheck.harness.record.own import harness_client
from leasecheck.harness.stores.leftovers import delete_matching, glob_literal

FILL_LIMIT_KEYS = 200_000
FILL_LIMIT_S = 5.0


@undoes("redis-config")
def _undo_config(entry: dict) -> None:
    """``{"kind": "redis-config", "host": H, "port": P, "settings": {...}}``: CONFIG SET them back."""
    r = harness_client(entry["host"], entry["port"], "heal", socket_timeout=5)
    try:
        for k, v in entry["settings"].items():
            r.config_set(k, v)
    except redis.ConnectionError:
        return      # the store is gone (it died with its harness), and its settings with it


@undoes("redis-del-prefix")
def _undo_fillers(entry: dict) -> None:
    """``{"kind": "redis-del-prefix", "host": H, "port": P, "prefix": K}``: delete the fillers."""
    r = harness_client(entry["host"], entry["port"], "heal", socket_timeout=5)
    try:
        delete_matching(r, glob_literal(entry["prefix"]) + "*")
    except redis.ConnectionError:
        return      # the store is gone, and its keys with it (stores of a run keep nothing on disk)


class Evict(Fault):
    name = "evict"
    order = 60
    summary = "squeeze maxmemory until the store evicts"
    targets = ("store",)
    default_target = "store"
    node_target = "store"           # evict:node2, evict:primary squeeze that node alone
    store_targets = ("store",)
    acts = "squeezes the store's memory"
    measures = ("evicted_keys", "evicted_run_keys", "evicted_run_key_examples", "evicted_events",
                "filler_keys", "maxmemory", "restored", "held_s")
    undoes = ("redis-config", "redis-del-prefix")

    def validate(self, cfg, target: str) -> None:
        super().validate(cfg, target)
        if target == "replica":
            raise UsageError("evict:replica: a replica evicts nothing of its own (it ignores maxmemory and refuses "
                             "the fillers' writes; its primary's evictions reach it as DELs); use evict:primary")

    def start(self, ctx: FaultContext, step: Step) -> Active:
        node = ctx.node_for(step.target)
        admin, store = node.admin, node.store
        old = admin.config_get("maxmemory") | admin.config_get("maxmemory-policy") | \
            admin.config_get("notify-keyspace-events")
        old = {_s(k): _s(v) for k, v in old.items()}
        filler = f"leasecheck-filler:{ctx.cfg.run_id}:"
        ids = [ctx.ledger.add({"kind": "redis-del-prefix", "host": store.host,
                               "port": store.port, "prefix": filler}),
               ctx.ledger.add({"kind": "redis-config", "host": store.host,
                               "port": store.port, "settings": old})]
        watch = EvictedKeys(store, ctx.cfg.store_db, filler, old.get("notify-keyspace-events", ""))
        before = _evicted(admin)
        used = int(admin.info("memory")["used_memory"])
        headroom = int(step.size) if step.size else 64 * 1024
        admin.config_set("maxmemory-policy", "allkeys-random")
        admin.config_set("maxmemory", str(used + headroom))
        # Fill until the store evicts a key of the run — each write past the limit evicts a key
        # at random, so a claim key goes within a few hundred writes when one is held — bounded
        # in keys and time.
        pipe = admin.pipeline(transaction=False)
        deadline = time.monotonic() + FILL_LIMIT_S
        n = 0
        while n < FILL_LIMIT_KEYS and time.monotonic() < deadline:
            for _ in range(200):
                pipe.set(f"{filler}{n}", "x" * 256)
                n += 1
            answers = pipe.execute(raise_on_error=False)
            # Refusals (OOM) mean the squeeze already bites harder than eviction can relieve
            # (client output buffers, the audit's own among them, are not evictable): enough.
            if any(isinstance(a, Exception) for a in answers):
                break
            if _evicted(admin) > before + 50:
                time.sleep(0.005)          # let the eviction events in
                if watch.count:
                    break
        return Active(step, ids, data={"before": before, "fillers": n, "old": old,
                                       "maxmemory": used + headroom, "watch": watch})

    def stop(self, ctx: FaultContext, active: Active) -> dict:
        evicted = _evicted(ctx.node_for(active.step.target).admin) - active.data["before"]
        watch = active.data["watch"]
        run_keys, examples = watch.stop()
        for ident in reversed(active.ledger_ids):  # restore the limit, then delete the fillers
            ctx.ledger.heal(ident)
        return {"evicted_keys": evicted, "evicted_run_keys": run_keys, "evicted_run_key_examples": examples,
                "evicted_events": watch.events,
                "filler_keys": active.data["fillers"],
                "maxmemory": active.data["maxmemory"], "restored": active.data["old"],
                "held_s": round(time.monotonic() - active.started, 4)}


class EvictedKeys:
    """Listens to the store's ``evicted`` keyspace events (``notify-keyspace-events`` gains
    ``Ee`` for the fault; the ledger restores the old flags) and counts the evicted keys that are
    not the fault's own fillers."""

    def __init__(self, store, db: int, filler_prefix: str, old_flags: str):
        # The client is kept: collecting it would close the pool, and the subscription with it.
        self._client = harness_client(store.host, store.port, "evicted-keys", db=db, socket_timeout=5)
        self._client.config_set("notify-keyspace-events", "".join(sorted(set(old_flags) | set("Ee"))))
        self._pubsub = self._client.pubsub(ignore_subscribe_messages=True)
        self._pubsub.subscribe(f"__keyevent@{db}__:evicted")
        self.filler = filler_prefix.encode()
        self.count, self.events, self.examples = 0, 0, []
        self.failed = False
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="evicted-keys", daemon=True)
        self._thread.start()

    def _loop(self) -> None:
        try:
            while not self._stop.is_set():
                msg = self._pubsub.get_message(timeout=0.1)
                if msg and msg.get("type") == "message":
                    self._seen(msg["data"])
        except Exception:
            self.failed = True   # e.g. the store went away: what was counted is not the whole story

    def _seen(self, key) -> None:
        key = key if isinstance(key, bytes) else str(key).encode()
        self.events += 1
        if not key.startswith(self.filler):
            self.count += 1
            if len(self.examples) < 5:
                self.examples.append(key.decode(errors="replace"))

    def stop(self) -> tuple[int | None, list[str]]:
        """(how many non-filler keys were evicted — None if the listener failed —, up to five of
        their names)."""
        time.sleep(0.05)          # events already sent are read before we stop listening
        self._stop.set()
        self._thread.join(2)
        try:
            self._pubsub.close()
            self._client.close()
        except redis.RedisError:
            pass
        return (None if self.failed else self.count), self.examples


def _evicted(admin) -> int:
    return int(admin.info("stats")["evicted_keys"])


def _s(v) -> str:
    return v.decode() if isinstance(v, bytes) else str(v)
