"""Kill the store (SIGKILL) and restart it on the same port after ``duration``: a volatile store
comes back empty, so every claim vanishes at once — gone without its holder releasing it.
``kill:holder`` kills the holder's worker instead (``leasecheck.harness.faults.kill_holder``).

While the store is down the proxy is disabled (clients are refused, as by a dead store), so the
audit can be drained before the kill and re-attached after the restart before any worker gets
back in: the audit stays complete, with a ``# restart`` line where the store lost everything.

Measured: the store's ``run_id`` (``INFO server``, new for every redis-server process) before
the kill and after the restart, and the number of keys after the restart, counted before the
workers are let back in — a new process that came back empty.
"""
from __future__ import annotations

import time

import requests

from leasecheck.harness.errors import UsageError
from leasecheck.harness.faults import kill_holder
from leasecheck.harness.faults.base import Active, Fault, FaultContext, Step
from leasecheck.harness.nemesis.heal import undoes


@undoes("proxy-enable")
def _undo_disable(entry: dict) -> None:
    """``{"kind": "proxy-enable", "api": URL, "proxy": NAME}``: let the workers back in (a proxy
    that refuses the connection is gone: nothing is left to undo)."""
    try:
        requests.post(f"{entry['api']}/proxies/{entry['proxy']}", json={"enabled": True}, timeout=5)
    except requests.ConnectionError:
        return


class Kill(Fault):
    name = "kill"
    order = 50
    summary = "SIGKILL the store and restart it empty, or the holder's worker and start a replacement"
    targets = ("store", "holder")
    node_target = "store"           # kill:node2 kills and restarts node2 alone
    default_target = "store"
    needs_proxy = True               # the proxy keeps the workers out while the audit re-attaches
    store_targets = ("store",)
    acts = "kills the store process"
    measures = ("down_s", "audit_drained", "keys_after_restart", "run_id_before", "run_id_after",
                *kill_holder.MEASURES)
    undoes = ("proxy-enable", "respawn")

    def uses_proxy(self, target: str) -> bool:
        return target != "holder"

    def validate(self, cfg, target: str) -> None:
        super().validate(cfg, target)
        if getattr(cfg, "topology", "single") == "replicated":
            raise UsageError(f"kill:{target}: a node restarted empty loses its replication settings, so it would "
                             "rejoin the replicated set under another address; use failover or pause:primary")
        if target == "holder":
            return                      # the store is left alone
        if not getattr(cfg, "audit", True):
            raise UsageError(f"kill:{target} drains and re-attaches the store audit around the restart; "
                             "drop --no-audit or the kill fault")

    def start(self, ctx: FaultContext, step: Step) -> Active:
        if step.target == "holder":
            return kill_holder.start(ctx, step)
        node = ctx.node_for(step.target)
        ident = ctx.ledger.add({"kind": "proxy-enable", "api": node.proxy.api_url, "proxy": node.proxy.name})
        node.proxy.set_enabled(False)
        drained = node.audit.drain(node.admin)
        node.audit.expect_restart("store killed by the harness (SIGKILL); it restarts empty")
        run_id = _run_id(node.admin)
        t = time.monotonic()
        node.store.kill()
        return Active(step, [ident], data={"drained": drained, "killed_at": t, "run_id": run_id})

    def stop(self, ctx: FaultContext, active: Active) -> dict:
        if active.step.target == "holder":
            return kill_holder.stop(ctx, active)
        node = ctx.node_for(active.step.target)
        try:
            node.store.restart()
            node.audit.resume()
            down = time.monotonic() - active.data["killed_at"]
            keys = node.admin.dbsize()          # before any worker gets back in
            run_id = _run_id(node.admin)
        finally:
            for ident in active.ledger_ids:
                ctx.ledger.heal(ident)  # let the workers back in
        return {"down_s": round(down, 4), "audit_drained": active.data["drained"],
                "keys_after_restart": keys, "run_id_before": active.data["run_id"],
                "run_id_after": run_id}


def _run_id(admin) -> str | None:
    try:
        return str(admin.info("server")["run_id"])
    except Exception:
        return None
