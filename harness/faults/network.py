"""Latency and partitions on the workers' path to the store, through the Toxiproxy HTTP API
(``toxiproxy-python``): the embedded proxy or a real Toxiproxy server (``--toxiproxy-url``) —
one code path for both. The audit and admin connections go to the store directly, so the
evidence is never delayed or cut.

- ``latency``: a ``latency`` toxic on the replies (downstream), ``size`` ms (default 0.2 x TTL)
  with 10% jitter; a probe connection through the proxy measures the round trip it causes.
- ``partition``: ``timeout`` toxics with timeout 0 on both directions — data is dropped (never
  delivered late) until the toxic is removed, and removing it closes the connections
  (Toxiproxy's semantics), so clients time out or see the close, reconnect and retry.
"""
from __future__ import annotations

import time

import redis
import requests
from redis.backoff import NoBackoff
from redis.retry import Retry

from leasecheck.harness.faults.base import Active, Fault, FaultContext, Param, Step
from leasecheck.harness.nemesis.heal import undoes
from leasecheck.harness.record.own import harness_client


@undoes("toxic")
def _undo_toxic(entry: dict) -> None:
    """``{"kind": "toxic", "api": URL, "proxy": NAME, "toxic": NAME}``: remove the toxic. A proxy
    that refuses the connection is gone, and its toxics with it (a proxy keeps them in memory;
    the embedded one dies with its harness): nothing is left to undo."""
    try:
        requests.delete(f"{entry['api']}/proxies/{entry['proxy']}/toxics/{entry['toxic']}", timeout=5)
    except requests.ConnectionError:
        return


class _ProxyFault(Fault):
    targets = ("workers",)
    default_target = "workers"
    needs_proxy = True
    undoes = ("toxic",)

    def _add(self, ctx: FaultContext, step: Step, name: str, type_: str, stream: str, attributes: dict) -> int:
        """A toxic on the proxy to the step's node, its undo written to the ledger first."""
        proxy = ctx.node_of(step).proxy
        ident = ctx.ledger.add({"kind": "toxic", "api": proxy.api_url, "proxy": proxy.name,
                                "toxic": name})
        proxy.add_toxic(name, type_, stream, attributes)
        return ident


class Latency(_ProxyFault):
    name = "latency"
    order = 30
    summary = "delay the replies on the workers' path"
    params = (Param("latency", "ms", "size", "the delay, e.g. 200ms"),
              Param("jitter", "ms", "jitter_ms", "its spread, e.g. 20ms (default a tenth)"))
    node_target = "workers"         # latency:node4 slows the workers' path to node4 alone
    lasts_ttls = False
    measures = ("latency_ms", "jitter_ms", "probe_rtt_ms", "after_heal_probe_rtt_ms", "held_s")

    def default_size(self, cfg, rng, target: str = "", option: str | None = None) -> float:
        return round(0.2 * cfg.ttl_s * 1000)

    def start(self, ctx: FaultContext, step: Step) -> Active:
        ms = int(step.size if step.size is not None else self.default_size(ctx.cfg, ctx.rng))
        jitter = int(step.params.get("jitter_ms", ms // 10))
        ident = self._add(ctx, step, f"lc-latency-{id(step)}", "latency", "downstream",
                          {"latency": ms, "jitter": jitter})
        active = Active(step, [ident], data={"latency_ms": ms, "jitter_ms": jitter})
        # 3 PINGs, and up to PROBE_MAX in all while the least is still beyond the toxic's reach
        # (latency + jitter + max(5 ms, 10 %)): a loaded machine only lengthens a round trip, so
        # more samples find the toxic's own delay where 3 can all be late (a CI run's least of 3
        # was 123 ms under a 100 ms toxic at load 10).
        active.data["probe"] = _probe_rtt(ctx.node_for(step.target), samples=3,
                                          enough_ms=ms + jitter + max(5.0, 0.1 * ms))
        return active

    def stop(self, ctx: FaultContext, active: Active) -> dict:
        for ident in active.ledger_ids:
            ctx.ledger.heal(ident)
        held = round(time.monotonic() - active.started, 4)
        return {"latency_ms": active.data["latency_ms"], "jitter_ms": active.data["jitter_ms"],
                "probe_rtt_ms": active.data["probe"],
                "after_heal_probe_rtt_ms": _probe_rtt(ctx.node_for(active.step.target), 3),
                "held_s": held}


class Partition(_ProxyFault):
    name = "partition"
    order = 40
    summary = "drop everything between the workers and the store"
    node_target = "workers"         # partition:node4 cuts the workers' path to node4 alone
    measures = ("probe_answered_during", "probe_rtt_after_heal_ms", "held_s")

    def start(self, ctx: FaultContext, step: Step) -> Active:
        ids = [self._add(ctx, step, f"lc-partition-{stream}-{id(step)}", "timeout", stream, {"timeout": 0})
               for stream in ("upstream", "downstream")]
        active = Active(step, ids)     # in place now: its duration runs from here, not after the probe
        active.data["probe_answered"] = _probe_rtt(ctx.node_for(step.target), 1, timeout_s=0.5) is not None
        return active

    def stop(self, ctx: FaultContext, active: Active) -> dict:
        for ident in active.ledger_ids:
            ctx.ledger.heal(ident)
        held = round(time.monotonic() - active.started, 4)
        return {"probe_answered_during": active.data["probe_answered"],
                "probe_rtt_after_heal_ms": _probe_rtt(ctx.node_for(active.step.target), 3),
                "held_s": held}


PROBE_MAX = 10      # PINGs a latency probe takes at most


def _probe_rtt(node, samples: int, timeout_s: float = 5.0, enough_ms: float | None = None) -> float | None:
    """The least PING round trip of ``samples`` through the proxy to ``node`` in ms; None when it
    did not answer. The least, not the median: a loaded machine only adds to a round trip (a CI
    run's median of 3 was 110 ms under a 100 ms toxic), and a latency toxic never delivers early.
    With ``enough_ms``, more PINGs follow (up to ``PROBE_MAX`` in all) while the least is above it."""
    client = harness_client("127.0.0.1", node.proxy.listen_port, "probe", socket_timeout=timeout_s,
                            socket_connect_timeout=timeout_s, retry=Retry(NoBackoff(), 0))
    rtts: list[float] = []
    try:
        while len(rtts) < samples or (enough_ms is not None and len(rtts) < PROBE_MAX and min(rtts) > enough_ms):
            t = time.monotonic()
            client.ping()
            rtts.append((time.monotonic() - t) * 1000)
    except redis.RedisError:
        return None
    finally:
        client.close()
    return round(min(rtts), 2)

