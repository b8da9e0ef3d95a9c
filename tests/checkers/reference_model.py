"""A reference model of a lease store and its workers that *generates* leasecheck runs.

The model is a discrete-event simulation in integer microseconds of history time. Workers have
slots; each slot runs the claim loop of `workloads/claim_loop.py` (pick a key, build an attempt
with a token, acquire with `SET NX PX`, run the job, release) on one audited connection, against
a truth store (`Store`) that applies every command atomically at the instant it runs. The store
clock is the history clock plus a constant offset. Because the model runs every command itself
it knows the ground truth: which command of which attempt removed (overwrote, shortened) which
claim, each claim's fate, the releases that found nothing, how many job runs overlapped.

It writes what the real harness writes (docs/history.md): history events (`invoke` /
`ok` / `fail` with `sent` = [conn, seq, name], `job_start` / `effect` / `job_end`, `run_start`,
`run_end`), the MONITOR audit (`ECHO leasecheck:conn:<conn>` first on every connection, `[0 lua]`
lines after `EVAL`/`EVALSHA`, `ECHO leasecheck:audit-end` and `# end`), `store-clock.jsonl`
samples and the config (`key_prefix`, `ttl_ms`, `max_overlap`).

Release styles: `del` (plain DEL by name), `lua` (server-side compare-and-delete), `gcd` (GET,
compare in the client, DEL). Injected faults, each with a probability per attempt:

- `pause`: the job is stretched past its TTL — aimed: it ends only once another attempt holds the
  key (or after a cap), so a plain-DEL release is a stale DEL of somebody else's claim, and with
  fixed tokens (`fixed_token`: the token is the worker's "host:pid", shared by its slots and
  attempts) a compare-and-delete release matches and deletes a claim of another attempt;
- `overwrite`: the acquire is `SET key tok PX ttl` without NX, sent once another attempt holds
  the key (an overwriting SET by another attempt);
- `pexpire`: after a pause the job "renews" with a plain `PEXPIRE key ms` (no token check),
  typically shortening another attempt's claim;
- `gcd_gap`: a GET-compare-DEL release stalls between its GET and its DEL until its claim has
  expired and another attempt holds the key.

Timing discipline, so that the truth is never decided by floating-point noise: commands run on a
10 us grid, job events sit 5 us off it, and a command is moved off an instant at which a claim
expires (Redis: a key is gone once now > expiry).
"""
from __future__ import annotations

import heapq
import json
import random
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from leasecheck.checkers import check
from leasecheck.checkers.read.audit import parse_audit

GRID = 10            # us: every command runs on this grid
JOB_SHIFT = 5        # us: job events sit this far off the grid
PREFIX = "lc:m:"
SHA_DEL = "5b3e1b6a2ad1d3c0f1a4bd6b3d4f6cc1a2b7e9d0"
SHA_PEXPIRE = "8d1a97c1e3b2a0f4c6e5d7b9a1c3e5f7d9b1a3c5"
CAS_DEL = "if redis.call('get', KEYS[1]) == ARGV[1] then\n  return redis.call('del', KEYS[1])\nend\nreturn 0\n"
CAS_PEXPIRE = ("if redis.call('get', KEYS[1]) == ARGV[1] then\n  return redis.call('pexpire', KEYS[1], ARGV[2])\n"
               "end\nreturn 0\n")
STYLES = ("del", "lua", "gcd")
ADMIN = "127.0.0.250:40001"   # the nemesis's connection (never announced by a conn marker)


# -- the truth store -------------------------------------------------------------------------
@dataclass
class TClaim:
    id: int
    key: str
    owner: str
    token: str
    created: int              # history us
    expiry: int               # history us (current)
    fate: str | None = None


@dataclass(frozen=True)
class TForeign:
    remover: str
    victim: str               # the victim claim's owner attempt
    key: str
    how: str                  # "deleted", "overwritten", "expiry shortened"
    at: int                   # history us
    victim_id: int = -1
    via: str = ""             # the removing command: "DEL", "SET", "PEXPIRE", "EVAL: del", ...


class Store:
    """The lease store: keys with a value, an owner (ground truth only) and an expiry."""

    def __init__(self):
        self.keys: dict[str, TClaim] = {}
        self.claims: list[TClaim] = []
        self.foreign: list[TForeign] = []
        self.via = ""             # the command being applied (for TForeign.via)
        self.kept_alive = 0       # another attempt's command lengthened a live claim's expiry (liveness)

    def peek(self, key: str, t: int) -> TClaim | None:
        c = self.keys.get(key)
        return c if c is not None and t <= c.expiry else None

    def _live(self, key: str, t: int) -> TClaim | None:
        c = self.peek(key, t)
        if c is None:
            self.keys.pop(key, None)
        return c

    def _end(self, c: TClaim, attempt: str, t: int, how: str) -> None:
        if c.fate is not None:
            return
        if attempt == c.owner:
            c.fate = "released_by_holder"
        else:
            c.fate = "foreign_release"
            self.foreign.append(TForeign(attempt, c.owner, c.key, how, t, c.id, self.via))

    def set(self, key: str, token: str, attempt: str, t: int, px_ms: int, nx: bool) -> bool:
        self.via = "SET"
        cur = self._live(key, t)
        if cur is not None and nx:
            return False
        if cur is not None:
            assert cur.owner != attempt, "the model never re-SETs its own claim"
            self._end(cur, attempt, t, "overwritten")
        c = TClaim(len(self.claims), key, attempt, token, t, t + px_ms * 1000)
        self.claims.append(c)
        self.keys[key] = c
        return True

    def restart(self, t: int) -> None:
        """The store dies at `t` and comes back empty: claims live then are lost."""
        for c in self.keys.values():
            if c.fate is None and c.expiry >= t:
                c.fate = "lost_in_restart"
        self.keys.clear()

    def evict(self, key: str) -> None:
        """An eviction fault silently removes the key's claim (no command)."""
        c = self.keys.pop(key)
        if c.fate is None:
            c.fate = "evicted"

    def get(self, key: str, t: int) -> str | None:
        c = self._live(key, t)
        return None if c is None else c.token

    def delete(self, key: str, attempt: str, t: int, via: str = "DEL") -> int:
        self.via = via
        c = self._live(key, t)
        if c is None:
            return 0
        self._end(c, attempt, t, "deleted")
        del self.keys[key]
        return 1

    def pexpire(self, key: str, ms: int, attempt: str, t: int, via: str = "PEXPIRE") -> int:
        self.via = via
        c = self._live(key, t)
        if c is None:
            return 0
        new = t + ms * 1000
        if attempt != c.owner and new < c.expiry:
            self._end(c, attempt, t, "expiry shortened")
        elif attempt != c.owner and new > c.expiry:
            self.kept_alive += 1
        c.expiry = new
        return 1

    def cas_del(self, key: str, token: str, attempt: str, t: int) -> tuple[int, list[tuple]]:
        """Compare-and-delete as one script: (reply, the script's own commands)."""
        if self.get(key, t) != token:
            return 0, [("get", key)]
        return self.delete(key, attempt, t, "EVAL: del"), [("get", key), ("del", key)]

    def cas_pexpire(self, key: str, token: str, ms: int, attempt: str, t: int) -> tuple[int, list[tuple]]:
        if self.get(key, t) != token:
            return 0, [("get", key)]
        return self.pexpire(key, ms, attempt, t, "EVAL: pexpire"), [("get", key), ("pexpire", key, str(ms))]


# -- what a run writes ------------------------------------------------------------------------
def quote(arg: str) -> str:
    """MONITOR's C-style quoting of one argument."""
    out = []
    for ch in arg:
        if ch in '"\\':
            out.append("\\" + ch)
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\r":
            out.append("\\r")
        elif ch == "\t":
            out.append("\\t")
        elif ord(ch) < 32 or ord(ch) == 127:
            out.append(f"\\x{ord(ch):02x}")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


@dataclass
class Line:
    t: int                    # history us (the store prints t + offset)
    addr: str                 # "127.0.0.1:port" or "lua"
    args: tuple

    def text(self, offset_us: int) -> str:
        s = self.t + offset_us
        return f"{s // 1_000_000}.{s % 1_000_000:06d} [0 {self.addr}] " + " ".join(quote(a) for a in self.args)


@dataclass
class Truth:
    claims: list[TClaim]
    foreign: list[TForeign]
    fates: Counter                      # (owner attempt, key, fate) -> claims
    found_nothing: int
    max_concurrency: int
    overlap_count: int
    token_reuse: int                    # token values written by claims of >= 2 attempts
    token_reuse_attempts: int
    walk_ins: int
    commands: int                       # audit command lines, markers aside
    injected: Counter = field(default_factory=Counter)   # which injections fired
    # releases that found nothing, by what their first command met in the store: "key_absent",
    # "token_differs" or "own" (None: not recorded by this generator)
    found_nothing_saw: Counter | None = None
    kept_alive: int = 0                 # expiries of live claims lengthened by another attempt

    @property
    def valid(self) -> bool:
        """Safety: no foreign release, no reused token."""
        return not self.foreign and not self.token_reuse

    def counts(self) -> dict[str, int]:
        from leasecheck.checkers.model.claims import FATES
        c = Counter(fate for (_, _, fate), n in self.fates.items() for _ in range(n))
        return {f: c.get(f, 0) for f in FATES}

    def foreign_pairs(self) -> Counter:
        return Counter((f.remover, f.victim, f.key, f.how, f.via) for f in self.foreign)


@dataclass
class ModelRun:
    """A generated run: the files' content in structured form, and the truth."""
    events: list[dict]
    lines: list                         # Line, or a str directive such as "# end"
    offset_us: int
    config: dict
    samples: list[dict]
    truth: Truth | None = None

    def audit_text(self) -> str:
        return "OK\n" + "".join((l if isinstance(l, str) else l.text(self.offset_us)) + "\n"
                                for l in self.lines)

    def history(self) -> list[dict]:
        evs = sorted(self.events, key=lambda e: e["time"])
        return [dict(e, index=i) for i, e in enumerate(evs)]

    def check(self) -> dict:
        return check(self.history(), parse_audit(self.audit_text()), self.config,
                     clock_samples=self.samples)

    def write(self, run_dir) -> Path:
        d = Path(run_dir)
        d.mkdir(parents=True, exist_ok=True)
        (d / "config.json").write_text(json.dumps(self.config, indent=1) + "\n")
        (d / "history.jsonl").write_text("".join(json.dumps(e) + "\n" for e in self.history()))
        (d / "audit.log").write_text(self.audit_text())
        (d / "store-clock.jsonl").write_text("".join(json.dumps(s) + "\n" for s in self.samples))
        return d


class Recorder:
    """Collects audit lines and history events; numbers each connection's commands."""

    def __init__(self, offset_us: int, config: dict):
        self.offset_us, self.config = offset_us, config
        self.lines: list = []
        self.events: list[dict] = [{"time": 0, "process": "harness", "type": "run_start",
                                    "config": config}]
        self.seq: dict[str, int] = {}
        self.commands = 0

    def connect(self, t: int, conn: str, addr: str) -> None:
        self.seq[addr] = 0
        self.lines.append(Line(t, addr, ("ECHO", "leasecheck:conn:" + conn)))

    def send(self, t: int, conn: str, addr: str, args: tuple, lua: list[tuple] = ()) -> list:
        """One command executed at `t`; returns its `sent` entry."""
        self.emit(t, addr, args, lua)
        return self.reserve(conn, addr, args)

    def reserve(self, conn: str, addr: str, args: tuple) -> list:
        """Number a command written on `conn` (its audit line, if any, comes from `emit`)."""
        n = self.seq[addr]
        self.seq[addr] += 1
        return [conn, n, args[0].upper()]

    def emit(self, t: int, addr: str, args: tuple, lua: list[tuple] = ()) -> None:
        """The audit line(s) of a command executed at `t`."""
        self.lines.append(Line(t, addr, tuple(args)))
        for i, sub in enumerate(lua):
            self.lines.append(Line(t + 1 + i, "lua", tuple(sub)))
        self.commands += 1

    def ev(self, t_us: int, process: str, type_: str, shift: int = 0, **kw) -> None:
        self.events.append({"time": (t_us + shift) * 1000, "process": process, "type": type_, **kw})

    def finish(self, t_end: int, samples_every_us: int = 500_000) -> ModelRun:
        self.ev(t_end, "harness", "run_end", reason="time-limit")
        self.lines.append(Line(t_end + GRID, "127.0.0.1:40000", ("ECHO", "leasecheck:audit-end")))
        self.lines.append("# end")
        samples = [{"time": h * 1000, "rtt_ns": 120_000, "store_us": h + self.offset_us}
                   for h in range(0, t_end + samples_every_us, samples_every_us)]
        return ModelRun(self.events, self.lines, self.offset_us, self.config, samples)


# -- the truth, from the store and the jobs ----------------------------------------------------
def settle(store: Store, jobs: dict[str, list], audit_end: int, releases: list[bool | None],
           commands: int, injected: Counter, saw: list[str] | None = None) -> Truth:
    """Seal the remaining fates and compute the measures the checker must agree with.
    `jobs`: attempt -> [key, start us (on the history clock, shifted), end us or None]."""
    for c in store.claims:
        if c.fate is not None:
            continue
        if c.expiry < audit_end:
            job = jobs.get(c.owner)
            held = job is not None and (job[2] is None or c.expiry < job[2])
            c.fate = "expired_while_held" if held else "expired_after_job"
        else:
            c.fate = "still_held"
    fates = Counter((c.owner, c.key, c.fate) for c in store.claims)
    end = max([audit_end] + [j[2] for j in jobs.values() if j[2] is not None])
    spans: dict[str, list[tuple[int, int]]] = {}
    for key, start, stop in jobs.values():
        spans.setdefault(key, []).append((start, stop if stop is not None else end))
    max_conc = count = 0
    for runs in spans.values():
        runs.sort()
        for i, (s, e) in enumerate(runs):
            max_conc = max(max_conc, sum(1 for s2, e2 in runs if s2 <= s and e2 > s))
            count += any(e2 > s for s2, e2 in runs[:i])
    owners: dict[str, set] = {}
    for c in store.claims:
        owners.setdefault(c.token, set()).add(c.owner)
    shared = [o for o in owners.values() if len(o) > 1]
    walk = 0
    for fr in store.foreign:
        job = jobs.get(fr.victim)
        walk += job is not None and any(
            c.key == fr.key and c.id > fr.victim_id and c.created >= fr.at and c.owner not in (fr.remover, fr.victim)
            and job[1] <= c.created and (job[2] is None or c.created < job[2])
            for c in store.claims)
    return Truth(store.claims, store.foreign, fates, sum(r is False for r in releases), max_conc, count,
                 len(shared), sum(len(o) for o in shared), walk, commands, injected,
                 None if saw is None else Counter(saw), store.kept_alive)


# -- the workers --------------------------------------------------------------------------------
class Sim:
    """Workers and slots running claim loops against `Store`; see the module docstring."""

    def __init__(self, rng: random.Random, workers: int = 2, slots: int = 1, keys: int = 1,
                 ttl_ms: int = 200, offset_us: int = 1_795_951_565_000_000, release: str = "lua",
                 fixed_token: bool = False, renew: bool = False, p_pause: float = 0.0,
                 p_overwrite: float = 0.0, p_pexpire: float = 0.0, p_gcd_gap: float = 0.0,
                 time_limit_ms: int | None = None, use_eval: bool = False, attempts_cap: int = 1000,
                 claims_cap: int | None = None, p_info: float = 0.0, restarts: int = 0,
                 evictions: int = 0):
        self.rng, self.W, self.S, self.ttl = rng, workers, slots, ttl_ms
        self.keys = [f"{PREFIX}job:{k}" for k in range(keys)]
        self.release, self.fixed, self.renew = release, fixed_token, renew
        self.p = {"pause": p_pause, "overwrite": p_overwrite, "pexpire": p_pexpire, "gcd_gap": p_gcd_gap}
        self.limit = (time_limit_ms or 4 * ttl_ms) * 1000
        self.use_eval, self.attempts_cap, self.claims_cap = use_eval, attempts_cap, claims_cap
        config = {"key_prefix": PREFIX, "ttl_ms": ttl_ms, "max_overlap": None, "lease": release,
                  "workers": workers, "slots": slots, "jobs": keys, "scenario": "reference-model"}
        self.rec = Recorder(offset_us, config)
        self.store = Store()
        self.now = 0
        self.jobs: dict[str, list] = {}
        self.releases: list[bool | None] = []
        self.found_nothing_saw: list[str] = []
        self.injected: Counter = Counter()
        # faults (opt-in): unknown outcomes with reconnects, store restarts, evictions
        self.p_info, self.n_restarts, self.n_evictions = p_info, restarts, evictions
        self.epoch = 0                  # store restarts so far: older connections are dead
        self.spawned: list = []         # generators started while running (late commands)

    # time helpers ----------------------------------------------------------------------------
    def grid(self, lo_us: int, hi_us: int) -> int:
        return self.rng.randint(max(1, lo_us // GRID), max(1, hi_us // GRID)) * GRID

    def lat(self) -> int:
        return self.grid(20, 1500)

    def _free(self, t: int) -> int:
        """Move `t` off every instant at which a live claim expires."""
        while any(c.expiry == t for c in self.store.keys.values()):
            t += GRID
        return t

    def run(self) -> ModelRun:
        heap, n = [], 0
        gens = [self.slot(w, s) for w in range(self.W) for s in range(self.S)]
        gens += [self._restarter(self.grid(self.ttl * 100, self.limit)) for _ in range(self.n_restarts)]
        gens += [self._evictor(i + 1, self.grid(self.ttl * 100, self.limit)) for i in range(self.n_evictions)]
        for gen in gens:
            heapq.heappush(heap, (next(gen), n, gen))
            n += 1
        while heap:
            t, _, gen = heapq.heappop(heap)
            self.now = self._free(max(t, self.now))
            try:
                nxt = gen.send(self.now)
            except StopIteration:
                nxt = None
            if nxt is not None:
                assert nxt >= self.now
                heapq.heappush(heap, (nxt, n, gen))
                n += 1
            while self.spawned:
                gen = self.spawned.pop()
                heapq.heappush(heap, (next(gen), n, gen))
                n += 1
        last = max(e["time"] // 1000 for e in self.rec.events)
        t_end = (max(self.now, last) // GRID + 1) * GRID   # the audit-end line runs at t_end + GRID
        while any(c.expiry == t_end + GRID for c in self.store.claims):
            t_end += GRID
        run = self.rec.finish(t_end)
        run.truth = settle(self.store, self.jobs, t_end + GRID, self.releases, self.rec.commands,
                           self.injected, self.found_nothing_saw)
        return run

    def _saw(self, out: list, key: str, attempt: str, t: int) -> None:
        """Note what a release's first command meets at `t` under `key`."""
        if not out:
            c = self.store.peek(key, t)
            out.append("key_absent" if c is None else "own" if c.owner == attempt else "token_differs")

    def held_by_other(self, key: str, attempt: str, token: str | None = None) -> bool:
        c = self.store.peek(key, self.now)
        return c is not None and c.owner != attempt and (token is None or c.token == token)

    # faults -----------------------------------------------------------------------------------
    def _restarter(self, at: int):
        """`# restart`: the store dies just after the last audit line and comes back empty."""
        yield at
        last = max((l.t for l in self.rec.lines if isinstance(l, Line)), default=0)
        self.store.restart(last + 1)
        self.rec.lines.append("# restart crash")
        self.epoch += 1
        self.injected["restart"] += 1

    def _evictor(self, n: int, at: int):
        """An eviction fault: markers from the nemesis's (unannounced) address; right after the
        start marker each live claim is evicted with probability 1/2."""
        t = yield at
        self.rec.lines.append(Line(t, ADMIN, ("ECHO", f"leasecheck:fault:{n}:evict:start")))
        t = yield t + GRID
        for key in list(self.store.keys):
            if self.store.peek(key, t) is not None and self.rng.random() < 0.5:
                self.store.evict(key)
                self.injected["evicted"] += 1
        t = yield t + self.grid(self.ttl * 100, self.ttl * 1000)
        self.rec.lines.append(Line(t, ADMIN, ("ECHO", f"leasecheck:fault:{n}:evict:end")))

    def _late(self, at: int, addr: str, epoch: int, args: tuple, apply):
        """A command of an abandoned connection that reaches the store late (unless the store
        restarted in between: the connection died with it)."""
        t = yield at
        if epoch == self.epoch:
            _, lua = apply(t)
            self.rec.emit(t, addr, args, lua)

    def _exec(self, ss: dict, t: int, args: tuple, apply, info_ok: bool = True):
        """One command of a call at `t` on the slot's connection (reconnecting first when the
        last one was given up or died in a restart). `apply(t)` runs it on the truth store and
        returns (reply, script commands). With `p_info` the reply is lost (an `info` call): the
        command ran, never ran, or runs late; the client gives the connection up.
        Returns (sent entry, reply or None when unknown, unknown?)."""
        if ss["dead"] or ss["epoch"] != self.epoch:
            ss["k"] += 1
            ss["conn"], ss["addr"] = f"{ss['proc']}.c{ss['k']}", f"127.0.0.{ss['id']}:{41000 + ss['k']}"
            ss["epoch"], ss["dead"] = self.epoch, False
            self.rec.connect(t, ss["conn"], ss["addr"])
            self.injected["reconnect"] += ss["k"] > 0
        mode = None
        if info_ok and self.p_info and self.rng.random() < self.p_info:
            mode = self.rng.choice(("ran", "dropped", "late"))
            self.injected["info_" + mode] += 1
            ss["dead"] = True
        if mode in (None, "ran"):
            r, lua = apply(t)
            return self.rec.send(t, ss["conn"], ss["addr"], args, lua), (r if mode is None else None), mode is not None
        entry = self.rec.reserve(ss["conn"], ss["addr"], args)
        if mode == "late":
            self.spawned.append(self._late(t + self.grid(self.ttl * 50, self.ttl * 1500), ss["addr"],
                                           self.epoch, args, apply))
        return entry, None, True

    # one slot ---------------------------------------------------------------------------------
    def slot(self, w: int, s: int):
        rng, rec, st = self.rng, self.rec, self.store
        proc, conn, addr = f"w{w}.s{s}", f"w{w}.s{s}.c0", f"127.0.0.1:{50000 + 100 * w + s}"
        t = yield self.grid(10, 3000)
        rec.connect(t, conn, addr)
        ss = {"proc": proc, "id": 2 + 10 * w + s, "k": 0, "conn": conn, "addr": addr, "epoch": 0, "dead": False}
        n = held = 0
        while t < self.limit and n < self.attempts_cap:
            attempt, key = f"{proc}.{n}", self.keys[rng.randrange(len(self.keys))]
            n += 1
            token = f"host-{w}:{4000 + w}" if self.fixed else f"{rng.getrandbits(64):016x}-{n}"  # unique per attempt
            style = self.release if self.release in STYLES else rng.choice(STYLES)
            inject = {k: rng.random() < p for k, p in self.p.items()}
            sent: list = []

            def done(t_done, f, kind, value):
                more = {"error": "timeout"} if kind == "info" else {"value": value}
                rec.ev(t_done, proc, kind, f=f, attempt=attempt, key=key, sent=list(sent), **more)
                sent.clear()

            # acquire -------------------------------------------------------------------------
            t += self.lat()
            if inject["overwrite"]:
                for _ in range(60):
                    t = yield t
                    if self.held_by_other(key, attempt):
                        break
                    t += self.grid(self.ttl * 50, self.ttl * 200)
            rec.ev(t, proc, "invoke", f="acquire", attempt=attempt, key=key)
            t = yield t + self.lat()
            overwrite = inject["overwrite"] and self.held_by_other(key, attempt)
            if overwrite:
                self.injected["overwrite"] += 1
            args = ("SET", key, token) + (() if overwrite else ("NX",)) + ("PX", str(self.ttl))
            entry, ok, unknown = self._exec(ss, t, args, lambda t, key=key, token=token, attempt=attempt, nx=not overwrite:
                                            (st.set(key, token, attempt, t, self.ttl, nx=nx), ()))
            sent.append(entry)
            t += self.lat()
            if unknown:     # the client cannot tell whether it holds the key: it moves on
                done(t, "acquire", "info", None)
                t += self.grid(self.ttl * 50, self.ttl * 300)
                continue
            done(t, "acquire", "ok" if ok else "fail", ok)
            if not ok:
                t += self.grid(self.ttl * 50, self.ttl * 300)
                continue
            # the job --------------------------------------------------------------------------
            t += self.lat()
            job_start = t
            rec.ev(t, proc, "job_start", JOB_SHIFT, attempt=attempt, key=key)
            self.jobs[attempt] = [key, (t + JOB_SHIFT), None]
            planned = t + self.grid(self.ttl * 100, self.ttl * 900)
            aborted = False
            if inject["pause"] or inject["pexpire"]:
                same_token = token if (self.fixed and style == "lua") else None
                t = yield planned
                while not self.held_by_other(key, attempt, same_token) and t < job_start + 4000 * self.ttl:
                    t = yield t + self.grid(self.ttl * 20, self.ttl * 100)
                self.injected["pause"] += 1
                if inject["pexpire"]:
                    ms = rng.randint(1, self.ttl)
                    rec.ev(t, proc, "invoke", f="renew", attempt=attempt, key=key)
                    t = yield t + self.lat()
                    self.injected["pexpire"] += 1
                    entry, r, _ = self._exec(ss, t, ("PEXPIRE", key, str(ms)),
                                             lambda t: (st.pexpire(key, ms, attempt, t), ()), info_ok=False)
                    sent.append(entry)
                    t += self.lat()
                    done(t, "renew", "ok", r == 1)
                    aborted = r != 1
            elif self.renew and style == "lua":
                t_next = t + self.ttl * 1000 // 3 // GRID * GRID
                while t_next < planned:
                    rec.ev(t_next, proc, "invoke", f="renew", attempt=attempt, key=key)
                    t = yield t_next + self.lat()
                    entry, r, _ = self._exec(ss, t, self._script(SHA_PEXPIRE, CAS_PEXPIRE, key, token, str(self.ttl)),
                                             lambda t: st.cas_pexpire(key, token, self.ttl, attempt, t), info_ok=False)
                    sent.append(entry)
                    t += self.lat()
                    done(t, "renew", "ok", r == 1)
                    if r != 1:
                        aborted = True
                        break
                    t_next += self.ttl * 1000 // 3 // GRID * GRID
                t = yield max(t, planned) if not aborted else t
            else:
                t = yield planned
            if not aborted:
                rec.ev(t, proc, "effect", JOB_SHIFT - 2, attempt=attempt, key=key)
            rec.ev(t, proc, "job_end", JOB_SHIFT, attempt=attempt, key=key, aborted=aborted)
            self.jobs[attempt][2] = t + JOB_SHIFT
            # release --------------------------------------------------------------------------
            t += self.lat()
            rec.ev(t, proc, "invoke", f="release", attempt=attempt, key=key)
            t = yield t + self.lat()
            unknown = False
            saw = []          # what the release's first command met (the truth for found-nothing)
            if style == "del":
                entry, r, unknown = self._exec(ss, t, ("DEL", key), lambda t, key=key, attempt=attempt:
                                               (self._saw(saw, key, attempt, t), st.delete(key, attempt, t), ())[1:])
                sent.append(entry)
                value = r == 1
            elif style == "lua":
                entry, r, unknown = self._exec(ss, t, self._script(SHA_DEL, CAS_DEL, key, token),
                                               lambda t, key=key, token=token, attempt=attempt:
                                               (self._saw(saw, key, attempt, t), st.cas_del(key, token, attempt, t))[1])
                sent.append(entry)
                value = r == 1
            else:
                entry, seen, _ = self._exec(ss, t, ("GET", key), lambda t: (self._saw(saw, key, attempt, t),
                                                                             st.get(key, t), ())[1:], info_ok=False)
                sent.append(entry)
                value = False
                if seen == token:
                    t += self.lat()
                    if inject["gcd_gap"]:
                        self.injected["gcd_gap"] += 1
                        cap = t + 4000 * self.ttl
                        t = yield t
                        while not self.held_by_other(key, attempt) and t < cap:
                            t = yield t + self.grid(self.ttl * 20, self.ttl * 100)
                    t = yield t
                    entry, r, _ = self._exec(ss, t, ("DEL", key), lambda t: (st.delete(key, attempt, t), ()),
                                             info_ok=False)
                    sent.append(entry)
                    value = r == 1
            value = None if unknown else value
            self.releases.append(value)
            if value is False:
                self.found_nothing_saw.append(saw[0])
            t += self.lat()
            done(t, "release", "info" if unknown else "ok", value)
            held += 1
            if self.claims_cap is not None and held >= self.claims_cap:
                return
            t += self.grid(10, self.ttl * 100)

    def _script(self, sha: str, body: str, key: str, *args: str) -> tuple:
        if self.use_eval:
            return ("EVAL", body, "1", key) + args
        return ("EVALSHA", sha, "1", key) + args


def generate(rng: random.Random, **kw) -> ModelRun:
    return Sim(rng, **kw).run()


def random_params(rng: random.Random, small: bool = False) -> dict:
    """A random configuration with random injections (what the property tests draw)."""
    release = rng.choice(STYLES + ("mixed",))
    fixed = rng.random() < 0.25
    inj = lambda: rng.choice((0.0, 0.0, 0.15, 0.4))
    return dict(workers=rng.randint(1, 2 if small else 3), slots=rng.randint(1, 2),
                keys=rng.randint(1, 2), ttl_ms=rng.choice((50, 120, 300, 1000)),
                offset_us=rng.choice((1_795_951_565_000_000, 1_000_000, rng.randrange(10**15))),
                release=release, fixed_token=fixed, renew=rng.random() < 0.3,
                p_pause=inj(), p_overwrite=inj() / 2, p_pexpire=inj() / 2, p_gcd_gap=inj(),
                time_limit_ms=None, use_eval=rng.random() < 0.3,
                attempts_cap=rng.randint(1, 3) if small else 1000)


# -- small runs of arbitrary commands (for the brute-force oracle) ------------------------------
KINDS = ("acquire", "overwrite", "del", "cas_del", "pexpire", "cas_pexpire", "gcd")


def arbitrary(steps: list[tuple], ttl_ms: int = 100, offset_us: int = 1_795_951_565_000_000,
              jobs: bool = True) -> ModelRun:
    """A run of single-command lease calls `steps` = [(attempt no, kind, key no, gap us, ms)],
    one attempt per slot, each call answered truthfully by `Store`: not a claim loop, anything
    goes (releases before acquires, several acquires by one attempt, ...). With `jobs`, an
    attempt's job starts after its first successful acquire and ends before its next release."""
    rec = Recorder(offset_us, {"key_prefix": PREFIX, "ttl_ms": ttl_ms, "max_overlap": None})
    st = Store()
    job: dict[str, list] = {}
    releases: list = []
    t = 0
    connected: set = set()
    keys = [f"{PREFIX}job:{k}" for k in range(2)]
    tokens = {}
    for a, kind, k, gap, ms in steps:
        w = a
        attempt, proc, conn, addr = f"w{w}.s0.0", f"w{w}.s0", f"w{w}.s0.c0", f"127.0.0.1:{50000 + w}"
        tok = tokens.setdefault(attempt, f"tok{a % 3}" if a >= 3 else f"tok{a}")  # w3 shares w0's token
        key = keys[k]
        t = t + max(GRID, gap // GRID * GRID)
        t = _free_of(st, t)
        if addr not in connected:
            connected.add(addr)
            rec.connect(t, conn, addr)
            t += GRID
            t = _free_of(st, t)
        f = {"acquire": "acquire", "overwrite": "acquire", "pexpire": "renew", "cas_pexpire": "renew"}.get(kind, "release")
        if f == "release" and jobs and job.get(attempt, [None, None, 0])[2] is None:
            rec.ev(t, proc, "job_end", -5, attempt=attempt, key=key)
            job[attempt][2] = t - 5
        rec.ev(t, proc, "invoke", -2, f=f, attempt=attempt, key=key)
        if kind in ("acquire", "overwrite"):
            cur = st.peek(key, t)
            if kind == "overwrite" and cur is not None and cur.owner == attempt:
                kind = "acquire"        # the model does not re-SET its own claim
            ok = st.set(key, tok, attempt, t, ms or ttl_ms, nx=kind == "acquire")
            args = ("SET", key, tok) + (("NX",) if kind == "acquire" else ()) + ("PX", str(ms or ttl_ms))
            sent = [rec.send(t, conn, addr, args)]
            value = ok
        elif kind == "del":
            value = st.delete(key, attempt, t) == 1
            sent = [rec.send(t, conn, addr, ("DEL", key))]
        elif kind == "cas_del":
            r, lua = st.cas_del(key, tok, attempt, t)
            value = r == 1
            sent = [rec.send(t, conn, addr, ("EVALSHA", SHA_DEL, "1", key, tok), lua)]
        elif kind == "pexpire":
            value = st.pexpire(key, ms or ttl_ms, attempt, t) == 1
            sent = [rec.send(t, conn, addr, ("PEXPIRE", key, str(ms or ttl_ms)))]
        elif kind == "cas_pexpire":
            r, lua = st.cas_pexpire(key, tok, ms or ttl_ms, attempt, t)
            value = r == 1
            sent = [rec.send(t, conn, addr, ("EVALSHA", SHA_PEXPIRE, "1", key, tok, str(ms or ttl_ms)), lua)]
        else:   # gcd: GET, then DEL 10 us later if the token matched
            seen = st.get(key, t)
            sent = [rec.send(t, conn, addr, ("GET", key))]
            value = False
            if seen == tok:
                t = _free_of(st, t + GRID)
                value = st.delete(key, attempt, t) == 1
                sent.append(rec.send(t, conn, addr, ("DEL", key)))
        if f == "release":
            releases.append(value)
        kind_done = "fail" if f == "acquire" and not value else "ok"
        rec.ev(t, proc, kind_done, 2, f=f, attempt=attempt, key=key, value=value, sent=sent)
        if f == "acquire" and value and jobs and attempt not in job:
            rec.ev(t, proc, "job_start", 5, attempt=attempt, key=key)
            job[attempt] = [key, t + 5, None]
    t_end = _free_of(st, t + GRID, every=True)
    run = rec.finish(t_end - GRID, samples_every_us=100_000)
    run.truth = settle(st, job, t_end, releases, rec.commands, Counter())
    return run


def _free_of(st: Store, t: int, every: bool = False) -> int:
    pool = st.claims if every else st.keys.values()
    while any(c.expiry == t for c in pool):
        t += GRID
    return t


# -- comparing the checker with the truth --------------------------------------------------------
def replay(run: ModelRun):
    """The checker's store model on `run` (leasecheck.checkers.model.claims.simulate, as `check` calls it)."""
    from leasecheck.checkers.model.claims import simulate
    from leasecheck.checkers.model.clock import StoreClock
    from leasecheck.checkers.read.jobs import job_runs
    from leasecheck.checkers.model.join import join
    from leasecheck.checkers.read.ops import pair_ops

    events = run.history()
    records, complete, _ = parse_audit(run.audit_text())
    ops, _ = pair_ops(events)
    jobs, _ = job_runs(events)
    joined = join(records, ops, complete)
    return simulate(records, joined, ops, jobs, StoreClock.from_samples(run.samples), PREFIX)


def checker_fates(sim) -> Counter:
    return Counter((c.owner, c.key, c.fate) for c in sim.claims)


def checker_foreign(sim) -> Counter:
    # the checker labels a script's command "EVALSHA: del" or "EVAL: del"
    return Counter((f.remover, f.victim.owner, f.victim.key, f.how, f.command.replace("EVALSHA:", "EVAL:"))
                   for f in sim.foreign)


def differences(run: ModelRun, result: dict | None = None) -> list[str]:
    """Everything in which the checker disagrees with the model's truth ([] when none)."""
    t, r = run.truth, result if result is not None else run.check()
    sim = replay(run)
    out = []

    def same(what, got, want):
        if got != want:
            out.append(f"{what}: checker {got!r}, truth {want!r}")

    same("foreign (remover, victim, key, how, via)", checker_foreign(sim), t.foreign_pairs())
    same("claim fates", checker_fates(sim), t.fates)
    same("foreign_releases", r["foreign_releases"], len(t.foreign))
    same("claims", r["claims"], t.counts())
    same("releases_found_nothing", r["releases_found_nothing"], t.found_nothing)
    outcomes = r["releases_found_nothing_outcomes"]
    same("found-nothing outcomes add up", sum(outcomes.values()), t.found_nothing)
    if t.found_nothing_saw is not None:
        # Never wrong, at most undecided: each outcome the checker names happened at least as often.
        for kind in ("key_absent", "token_differs"):
            if outcomes[kind] > t.found_nothing_saw[kind]:
                out.append(f"found-nothing outcome {kind}: checker {outcomes[kind]} > truth "
                           f"{t.found_nothing_saw[kind]} ({dict(t.found_nothing_saw)})")
    same("overlap.max_concurrency", r["overlap"]["max_concurrency"], t.max_concurrency)
    same("overlap.count", r["overlap"]["count"], t.overlap_count)
    same("token_reuse.tokens", r["token_reuse"]["tokens"], t.token_reuse)
    same("token_reuse.attempts", r["token_reuse"]["attempts"], t.token_reuse_attempts)
    same("walk_ins", r["walk_ins"], t.walk_ins)
    same("safety.valid", r["safety"]["valid"], t.valid)
    same("kept_alive.commands", r["kept_alive"]["commands"], t.kept_alive)
    if t.valid and not t.kept_alive and r["stuck_claims"]["count"] == 0 and r["holds"]["over_max_hold"] == 0:
        same("valid", r["valid"], True)
    same("disagreements", r["disagreements"], [])
    same("problems", r["problems"], [])
    same("audit.complete", r["audit"]["complete"], True)
    same("audit.lines", r["audit"]["lines"], sum(isinstance(l, Line) for l in run.lines))
    return out
