"""Memory pressure: squeeze the store's ``maxmemory`` under an ``allkeys-random`` policy and write
filler keys until it evicts — claim keys among them (the brief: a claim can be gone without its
holder releasing it). The old limit and policy are restored and the fillers deleted afterwards.

Evictions are invisible in the audit, so the nemesis marks the window with ``ECHO`` markers and
the checker treats claims live in it as ones that may vanish silently.
"""
from __future__ import annotations

import time

from harness.faults.base import Active, Fault, FaultContext, Step, refuse_external_store

FILL_LIMIT_KEYS = 200_000
FILL_LIMIT_S = 5.0


class Evict(Fault):
    name = "evict"
    targets = ("store",)
    default_target = "store"

    def validate(self, cfg, target: str) -> None:
        super().validate(cfg, target)
        refuse_external_store(cfg, "evict", "squeezes the store's memory", "the evict fault")

    def start(self, ctx: FaultContext, step: Step) -> Active:
        admin = ctx.admin
        old = {k: v for k, v in (admin.config_get("maxmemory") | admin.config_get("maxmemory-policy")).items()}
        old = {_s(k): _s(v) for k, v in old.items()}
        filler = f"leasecheck-filler:{ctx.cfg.run_id}:"
        ids = [ctx.ledger.add({"kind": "redis-del-prefix", "host": ctx.cfg.store_host,
                               "port": ctx.cfg.store_port, "prefix": filler}),
               ctx.ledger.add({"kind": "redis-config", "host": ctx.cfg.store_host,
                               "port": ctx.cfg.store_port, "settings": old})]
        before = _evicted(admin)
        used = int(admin.info("memory")["used_memory"])
        headroom = int(step.size) if step.size else 64 * 1024
        admin.config_set("maxmemory-policy", "allkeys-random")
        admin.config_set("maxmemory", str(used + headroom))
        # Fill until the store starts evicting (bounded in keys and time).
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
            if _evicted(admin) > before + 50 or any(isinstance(a, Exception) for a in answers):
                break
        return Active(step, ids, data={"before": before, "fillers": n, "old": old,
                                       "maxmemory": used + headroom})

    def stop(self, ctx: FaultContext, active: Active) -> dict:
        evicted = _evicted(ctx.admin) - active.data["before"]
        for ident in reversed(active.ledger_ids):  # restore the limit, then delete the fillers
            ctx.ledger.heal(ident)
        return {"evicted_keys": evicted, "filler_keys": active.data["fillers"],
                "maxmemory": active.data["maxmemory"], "restored": active.data["old"],
                "held_s": round(time.monotonic() - active.started, 4)}


def _evicted(admin) -> int:
    return int(admin.info("stats")["evicted_keys"])


def _s(v) -> str:
    return v.decode() if isinstance(v, bytes) else str(v)
