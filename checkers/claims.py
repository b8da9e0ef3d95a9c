"""Replay the audit against a model of the store and follow every claim to its fate.

The keys modelled, per db, are those a lease call writes — whatever their name: a namespace such
as `app-locks:<job key>`, a library's `lock:<name>`, a key of the lease's own making — and every key
starting with the run's `key_prefix`. A key is followed from the first command of a lease call
(acquire, release, renew) that touches it; from then on every command on it is applied, whoever
sent it. Keys only other clients touch (the nemesis's fillers, another application's keys on a
shared store) and keys only a job's sink writes are left alone. Commands are applied in audit
order at the store's own times; a command run by a script uses the time of its `EVAL` line (Redis
freezes the clock for a script). A key with expiry E (ms) is gone once store time > E. Within
`AMBIGUOUS_MS` of E the clock cannot decide, so the client's reported result of that command's call
decides when it is known (an acquire that succeeded saw the key absent; a release or renew of the
claim's own attempt that succeeded saw it present); otherwise the clock rule is applied. Further
out, up to `trust_ms` (TRUST_CLIENT_MS, or more when the run stepped the store's clock), a
client's result that *contradicts* the clock still wins. Each such case is reported in `edges`
(`expiry_edge` in the results).

Every create of an absent key is a claim, owned by the creating command's attempt. Its fate:

- `released_by_holder`: removed by a command of its own attempt;
- `expired_while_held`: its expiry passed while its attempt's job had started and not ended
  (history `job_start`/`job_end`; expiry converted with the store clock);
- `expired_after_job`: its expiry passed otherwise (after the job, or its attempt never ran one);
- `foreign_release`: deleted, overwritten, or had its expiry shortened by a command of a
  *different* attempt; each one is also listed in `foreign`;
- `still_held`: present at the last audit line;
- `evicted`: live during an eviction fault (between the nemesis's `ECHO leasecheck:fault:N:evict:
  start` and `...:end` markers) and later found absent by a client whose result proves it (an
  acquire that succeeded, its holder's release or renewal that found nothing, a removal that
  removed nothing). Such a claim is only called foreign-released when the remover's result
  proves it removed something;
- `lost_in_restart`: live when the store restarted (a `# restart` record): volatile, it came back
  empty;
- `unknown`: it cannot be followed: removed by an unattributed command, owned by nobody known,
  or live when the audit had a gap.

Afterwards every call with a known result is checked against its effect in the model (an acquire
that reported success but created nothing, a failed acquire whose SET created a claim, ...);
each mismatch is a `disagreements` entry. Nothing is smoothed over.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from protocol import fault_marker_pattern

from .audit import AuditRecord
from .clock import StoreClock
from .jobs import JobRun
from .join import Join
from .ops import Op

FATES = ("released_by_holder", "expired_while_held", "expired_after_job", "foreign_release",
         "evicted", "lost_in_restart", "still_held", "unknown")
# What a release that found nothing met, by the brief's three outcomes of a checked release:
# the key absent (its claim reached its deadline and nobody re-claimed it yet), another
# attempt's claim there (the token differs), or neither can be told (the key's state is lost, its
# claim may have been evicted, the release's commands are not in the audit, ...).
FOUND_NOTHING = ("key_absent", "token_differs", "unknown")
LEASE_CALLS = frozenset({"acquire", "release", "renew"})   # calls whose keys the model follows
EVICT_MARK = fault_marker_pattern("evict")
AMBIGUOUS_MS = 2.0
# The MONITOR line's time and the time Redis judges expiry by are read microseconds apart — or
# further apart when the store is descheduled between the two reads, or when its clock is stepped
# (a clock fault) in between. Within this distance of an expiry, a client's result that proves
# the key present or absent beats the logged time; further out, a contradiction is a disagreement.
TRUST_CLIENT_MS = 250.0


class _Unknown:
    def __repr__(self):
        return "UNKNOWN"


UNKNOWN = _Unknown()  # a key whose state the model lost (after a gap)
_NONE: frozenset = frozenset()
_NONZERO = frozenset("123456789")


@dataclass(slots=True)
class Claim:
    id: int
    db: int
    key: str
    owner: str | None
    op: int | None
    line: int            # audit line of the creating command
    created: float       # store time, s
    expires_ms: float | None     # the current expiry (renewals move it)
    deadline_ms: float | None = None   # the expiry it was created with
    fate: str | None = None
    ended: float | None = None   # store time, s, when the fate was sealed (the expiry, if it expired)
    evictable: bool = False      # live during an eviction fault: it may vanish without a command
    gone_op: int | None = None   # the call whose command first found it expired
    born_ns: int | None = None   # history time: the creating call's invocation
    gone_ns: int | None = None   # history time: the completion of the call that found it expired
    token: str | None = None     # the value a SET created it with (to find reused tokens)


@dataclass
class ForeignRelease:
    remover: str
    remover_op: int | None
    victim: Claim
    command: str         # "DEL", or "EVAL: del" for a script's command
    how: str             # "deleted", "overwritten", "expiry shortened", ...
    time: float          # store time, s
    line: int


@dataclass
class ClaimsResult:
    claims: list[Claim] = field(default_factory=list)
    foreign: list[ForeignRelease] = field(default_factory=list)
    disagreements: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    edges: list[str] = field(default_factory=list)   # commands within AMBIGUOUS_MS of an expiry
    lost_keys: int = 0   # keys whose state became unknown though their last claim's fate was sealed
    stale: dict[int, bool | None] = field(default_factory=dict)  # effect op -> written without a live claim?
    # acquires that reported a win while the audit shows no claim created by them: how many,
    # and the first few with what the audit shows of their commands
    unmatched_wins: int = 0
    unmatched_first: list[str] = field(default_factory=list)
    # releases that found nothing, by what their first command saw (the brief's outcomes)
    found_nothing: Counter = field(default_factory=lambda: Counter({k: 0 for k in FOUND_NOTHING}))

    def counts(self) -> dict[str, int]:
        """Claims per fate, every fate present (0 when none)."""
        c = Counter(claim.fate for claim in self.claims)
        return {fate: c.get(fate, 0) for fate in FATES}


@dataclass(slots=True)
class _Cmd:
    rec: AuditRecord
    t: float             # store time, s (the EVAL's for script commands)
    attempt: str | None
    op: Op | None
    label: str

    @property
    def t_ms(self) -> float:
        return self.t * 1000.0

    @property
    def where(self) -> str:
        return f"audit.log:{self.rec.line}: {self.label}"


def simulate(records: list[AuditRecord], joined: Join, ops: list[Op], jobs: dict[str, JobRun],
             clock: StoreClock, key_prefix: str, trust_ms: float = TRUST_CLIENT_MS) -> ClaimsResult:
    """Replay `records` (attributed by `joined`) and return every claim with its fate."""
    replay = Replay(jobs, clock, key_prefix, trust_ms)
    for i, rec in enumerate(records):
        k = joined.op[i]
        replay.feed(rec, joined.attempt[i], ops[k] if k is not None else None)
    return replay.finish(joined, ops)


class Replay:
    """The store model fed one audit record at a time with its attribution (from `Joiner`), so
    the audit is never held in memory. `settle(op)` cross-checks a call whose commands have all
    been applied (the model then forgets it); `finish(joined, ops)` seals the remaining claims
    and cross-checks the calls not settled. `need(t)`, when given, is called before the model
    looks at job runs up to history time `t` (a streaming check reads the history that far)."""

    def __init__(self, jobs: dict[str, JobRun], clock: StoreClock, key_prefix: str,
                 trust_ms: float = TRUST_CLIENT_MS, need=None) -> None:
        self.sim = _Sim(key_prefix, jobs, clock, trust_ms, need)
        self.last_time = 0.0
        self.script = ("", 0.0)

    def feed(self, rec: AuditRecord, attempt: str | None, op: Op | None) -> None:
        sim = self.sim
        if rec.kind == "gap":
            sim.gap(self.last_time)
            return
        if rec.kind == "restart":
            sim.restart(self.last_time)
            return
        if rec.addr != "lua":
            self.last_time = rec.time
            self.script = (rec.name, rec.time)
            if rec.name == "ECHO" and len(rec.argv) == 2:
                m = EVICT_MARK.match(rec.argv[1])
                if m:
                    sim.evicting(m.group(1) == "start")
            t, label = rec.time, rec.name
        else:
            t, label = self.script[1], f"{self.script[0]}: {rec.argv[0]}"
        if op is not None and op.f == "effect" and rec.addr != "lua" and rec.name.startswith("EVAL"):
            sim.judge_effect(_Cmd(rec, t, attempt, op, label))
        sim.apply(_Cmd(rec, t, attempt, op, label))

    def settle(self, op: Op) -> None:
        """`op`'s commands are all applied: check its result against their effect, forget it."""
        self.sim.cross_check_one(op, missing=False)
        self.sim.classify_release(op)
        self.sim.effects.pop(op.index, None)

    def finish(self, joined: Join, ops) -> ClaimsResult:
        self.sim.finish(self.last_time)
        for op in ops:
            self.sim.cross_check_one(op, op.index in joined.missing)
            self.sim.classify_release(op)
        return self.sim.out


class _Sim:
    def __init__(self, prefix: str, jobs: dict[str, JobRun], clock: StoreClock,
                 trust_ms: float = 0.0, need=None):
        self.prefix, self.jobs, self.clock, self.need = prefix, jobs, clock, need
        self.trust_ms = max(trust_ms, AMBIGUOUS_MS)
        self.state: dict[tuple[int, str], Claim | _Unknown | None] = {}
        self.default: _Unknown | None = None    # UNKNOWN for unseen keys after a gap
        self.effects: dict[int, set[str]] = {}
        self.saw: dict[int, str] = {}          # release op -> what its first command met
        self.noted: set[int] = set()
        self.out = ClaimsResult()
        self.eviction = False   # inside an eviction fault window
        self.followed: set[tuple[int, str]] = set()   # keys a lease call has touched
        # attempt -> its claim not yet sealed (UNKNOWN once it could not be followed): what a
        # job's sink write is judged against, whatever key the claim is on
        self.held: dict[str, Claim | _Unknown] = {}
        self.shown: dict[int, list[str]] = {}   # acquire op -> its commands as the audit shows them

    def follows(self, c: _Cmd, key: str) -> bool:
        """Is `key` modelled? A lease call's command makes it so (see the module docstring)."""
        if key.startswith(self.prefix):
            return True
        k = (c.rec.db, key)
        if k in self.followed:
            return True
        if c.op is not None and c.op.f in LEASE_CALLS:
            self.followed.add(k)
            return True
        return False

    # -- dispatch ---------------------------------------------------------------------------
    def apply(self, c: _Cmd) -> None:
        argv, name = c.rec.argv, c.rec.name
        op = c.op
        if op is not None:
            if op.f == "release" and op.index not in self.saw:
                self.saw[op.index] = self.seen_by(op, c)
            elif op.f == "acquire":
                shown = self.shown.setdefault(op.index, [])
                if len(shown) < 6:
                    shown.append(" ".join([c.label] + argv[1:2]))
        handler = _HANDLERS.get(name)
        if handler is None:
            if name not in _READ_ONLY:
                db = c.rec.db
                ours = [a for a in argv[1:] if self.state.get((db, a), self.default) is not None
                        and (a.startswith(self.prefix) or (db, a) in self.followed)]
                if ours:
                    self.out.problems.append(f"{c.where}: command not modelled; claims on {ours} may be wrong")
            return
        if name in _ANY_KEY or (len(argv) > 1 and self.follows(c, argv[1])):
            try:
                handler(self, c)
            except (ValueError, IndexError) as e:
                self.out.problems.append(f"{c.where}: rejected by the store ({e}); no effect")

    # -- the model --------------------------------------------------------------------------
    def live(self, key: str, c: _Cmd):
        """The key's claim at `c`'s time (expiring it first if due), None, or UNKNOWN."""
        k = (c.rec.db, key)
        cur = self.state.get(k, self.default)
        if not isinstance(cur, Claim) or cur.expires_ms is None:
            return cur
        d = c.t_ms - cur.expires_ms
        gone = d > 0
        present = _client_says_present(c.op, cur, c) if abs(d) <= self.trust_ms else None
        if abs(d) <= AMBIGUOUS_MS or (present is not None and present == gone):
            gone = gone if present is None else not present
            if cur.id not in self.noted:    # report each claim's ambiguity once
                self.noted.add(cur.id)
                how = "the store clock" if present is None else "the client's result"
                self.out.edges.append(f"{c.where} on {key} ran {d:+.1f} ms from the expiry of "
                                         f"{cur.owner}'s claim: {how} says it was "
                                         f"{'gone' if gone else 'present'}")
        if gone:
            self.expire(cur)
            cur.gone_op = c.op.index if c.op is not None else None
            cur.gone_ns = c.op.end_time if c.op is not None else None
            self.state[k] = None
            return None
        if cur.evictable and _client_says_present(c.op, cur, c) is False:
            self.seal(cur, "evicted", c.t)
            self.state[k] = None
            return None
        return cur

    def seen_by(self, op: Op, c: _Cmd) -> str:
        """What release `op`'s command `c` meets under the call's key, without changing the
        model: "key_absent", "token_differs", "own" (its own claim) or "unknown"."""
        key = _first_key(c.rec)
        if key is None or not self.follows(c, key):
            return "unknown"
        cur = self.state.get((c.rec.db, key), self.default)
        if cur is UNKNOWN:
            return "unknown"
        if cur is None or (cur.expires_ms is not None and c.t_ms - cur.expires_ms > AMBIGUOUS_MS):
            return "key_absent"
        if cur.expires_ms is not None and abs(c.t_ms - cur.expires_ms) <= AMBIGUOUS_MS:
            return "unknown"          # at its expiry: the clock cannot tell
        if cur.evictable:
            return "unknown"          # it may have been evicted already
        return "own" if cur.owner == op.attempt else "token_differs"

    def classify_release(self, op: Op) -> None:
        """Count a release that found nothing by what its first command met."""
        saw = self.saw.pop(op.index, "unknown")
        if op.f == "release" and op.type == "ok" and op.value is False:
            outcome = saw if saw in FOUND_NOTHING else "unknown"
            self.out.found_nothing[outcome] += 1
            op.outcome = outcome

    def judge_effect(self, c: _Cmd) -> None:
        """A job's sink write (``--sink``) ran here: was its attempt's claim still live? The
        last script call of the effect decides (an EVALSHA refused with NOSCRIPT is retried).
        The attempt's own claim is looked up by attempt: it may be on any key."""
        mine = self.held.get(c.op.attempt)
        if mine is UNKNOWN:
            self.out.stale[c.op.index] = None
            return
        if mine is None:   # no claim of its own still followed: was the key's state lost?
            lost = (self.follows(c, c.op.key)
                    and self.state.get((c.rec.db, c.op.key), self.default) is UNKNOWN)
            self.out.stale[c.op.index] = None if lost else True
            return
        cur = self.live(mine.key, c)
        self.out.stale[c.op.index] = None if cur is UNKNOWN else cur is not mine

    def evicting(self, on: bool) -> None:
        """An eviction fault starts (every key now held may vanish silently) or ends. A claim
        whose fate is already sealed — its expiry cut short by another attempt — still sits in
        the key until that expiry, so it is evictable too."""
        self.eviction = on
        if on:
            for cur in self.state.values():
                if isinstance(cur, Claim):
                    cur.evictable = True

    def create(self, key: str, c: _Cmd, expires_ms: float | None) -> None:
        argv = c.rec.argv
        claim = Claim(len(self.out.claims), c.rec.db, key, c.attempt, c.op.index if c.op else None,
                      c.rec.line, c.t, expires_ms, expires_ms, evictable=self.eviction,
                      token=argv[2] if c.rec.name in ("SET", "SETNX") and len(argv) > 2 else None,
                      born_ns=c.op.invoke_time if c.op else None)
        self.out.claims.append(claim)
        self.state[(c.rec.db, key)] = claim
        if c.attempt is not None:
            self.held[c.attempt] = claim
        self.effect(c, "created")
        if c.attempt is None:
            self.out.problems.append(f"{c.where}: claim on {key} created by an unattributed command")

    def expire(self, claim: Claim) -> None:
        at = self.clock.to_history_ns(claim.expires_ms / 1000)
        if self.need is not None:
            self.need(at)
        job = self.jobs.get(claim.owner) if claim.owner else None
        held = job is not None and (job.end is None or at < job.end)
        self.seal(claim, "expired_while_held" if held else "expired_after_job", claim.expires_ms / 1000)

    def seal(self, claim: Claim, fate: str, t: float) -> None:
        if claim.fate is None:
            claim.fate, claim.ended = fate, t
            if claim.owner is not None and self.held.get(claim.owner) is claim:
                if fate == "unknown":
                    self.held[claim.owner] = UNKNOWN
                else:
                    del self.held[claim.owner]

    def end_by(self, claim: Claim, c: _Cmd, how: str) -> None:
        """`c` removed, overwrote or shortened `claim`: decide whose doing it was."""
        if c.attempt is None or claim.owner is None:
            self.effect(c, "unknown")
            if claim.fate is None:
                self.out.problems.append(f"{c.where}: {how} {claim.owner or 'an unknown owner'}'s "
                                         f"claim on {claim.key}, but the command's attempt is "
                                         f"{c.attempt or 'unknown'} (from {c.rec.addr})")
            self.seal(claim, "unknown", c.t)
        elif c.attempt == claim.owner:
            self.effect(c, "removed_own")
            self.seal(claim, "released_by_holder", c.t)
        elif claim.evictable and not _proves_removal(c.op):
            # It may have been evicted already: without proof that this command removed
            # something, it is no foreign release. A release or renewal that answered "nothing
            # there" shows the eviction; an overwriting SET succeeds either way, so it decides nothing.
            if c.op is not None and c.op.type in ("ok", "fail") and c.op.f in ("release", "renew"):
                self.seal(claim, "evicted", c.t)
            else:
                self.effect(c, "unknown")
                self.out.problems.append(f"{c.where}: {how} {claim.owner}'s claim on {claim.key}, which "
                                         "an eviction fault may already have removed; the call's outcome "
                                         "is unknown, so this cannot be decided")
                self.seal(claim, "unknown", c.t)
        else:
            self.effect(c, "removed_foreign")
            if claim.fate is None:
                self.out.foreign.append(ForeignRelease(c.attempt, c.op.index if c.op else None,
                                                       claim, c.label, how, c.t, c.rec.line))
            self.seal(claim, "foreign_release", c.t)

    def effect(self, c: _Cmd, kind: str) -> None:
        if c.op is not None:
            self.effects.setdefault(c.op.index, set()).add(kind)

    # -- commands ---------------------------------------------------------------------------
    def write(self, c: _Cmd, key: str, nx=False, xx=False, expires=None, keepttl=False) -> None:
        """SET and its relatives."""
        cur = self.live(key, c)
        if cur is UNKNOWN:
            if nx and c.op is not None and c.op.f == "acquire" and c.op.succeeded:
                cur = None     # the client saw its create succeed: the key was absent
            elif nx or xx:
                self.effect(c, "unknown")
                return
            else:
                cur = None     # overwritten; what it held is unknown
        if (nx and isinstance(cur, Claim) and cur.evictable
                and (c.op is None or c.op.succeeded is None)):
            # An eviction fault may already have removed `cur`: then this create happened, and
            # nobody's result says whether it did. The key can no longer be followed.
            self.effect(c, "unknown")
            self.out.problems.append(f"{c.where}: a conditional create on {cur.key}, whose claim by "
                                     f"{cur.owner} an eviction fault may have removed; the call's "
                                     "outcome is unknown, so whether it created a claim cannot be decided")
            if cur.fate is None:
                self.seal(cur, "unknown", c.t)
            else:   # its fate stands (e.g. cut short by another); what the key holds now is lost
                self.out.lost_keys += 1
            self.state[(c.rec.db, key)] = UNKNOWN
            return
        if (nx and cur is not None) or (xx and cur is None):
            return
        if cur is not None:
            if c.attempt is not None and cur.owner == c.attempt:
                cur.expires_ms = cur.expires_ms if keepttl else expires
                self.effect(c, "extended_own")
                return
            self.end_by(cur, c, "overwritten")
        self.create(key, c, cur.expires_ms if (keepttl and cur) else expires)

    def delete(self, c: _Cmd, key: str) -> None:
        cur = self.live(key, c)
        if cur is UNKNOWN:
            self.effect(c, "unknown")
        elif cur is not None:
            self.end_by(cur, c, "deleted")
        self.state[(c.rec.db, key)] = None

    def set_expiry(self, c: _Cmd, key: str, new: float | None, flag: str = "") -> None:
        """EXPIRE-like change to `new` (ms, None = persist), honouring NX/XX/GT/LT."""
        cur = self.live(key, c)
        if cur is UNKNOWN:
            self.effect(c, "unknown")
            return
        if cur is None:
            return
        old = cur.expires_ms
        if ((flag == "NX" and old is not None) or (flag == "XX" and old is None)
                or (flag == "GT" and (old is None or new is None or new <= old))
                or (flag == "LT" and old is not None and (new is None or new >= old))):
            return
        if new is not None and new <= c.t_ms:
            self.end_by(cur, c, "deleted (expiry set in the past)")
            self.state[(c.rec.db, key)] = None
            return
        cur.expires_ms = new
        if c.attempt is not None and c.attempt == cur.owner:
            self.effect(c, "extended_own")
        elif new is not None and (old is None or new < old):
            self.end_by(cur, c, "expiry shortened")
        else:
            self.effect(c, "extended_foreign")

    def flush(self, c: _Cmd) -> None:
        for (db, key), cur in list(self.state.items()):
            if c.rec.name == "FLUSHALL" or db == c.rec.db:
                self.delete(c, key)
        if c.rec.name == "FLUSHALL":
            self.default = None

    # -- gaps, the end, and the clients' view ------------------------------------------------
    def gap(self, before: float) -> None:
        """Commands are missing here: claims still live become `unknown`, every key UNKNOWN."""
        for k, cur in self.state.items():
            if isinstance(cur, Claim) and cur.fate is None:
                if cur.expires_ms is not None and cur.expires_ms < before * 1000:
                    self.expire(cur)
                else:
                    self.seal(cur, "unknown", before)
            self.state[k] = UNKNOWN
        self.default = UNKNOWN

    def restart(self, before: float) -> None:
        """The store restarted empty: live claims are `lost_in_restart`, every key is absent."""
        for k, cur in self.state.items():
            if isinstance(cur, Claim) and cur.fate is None:
                if cur.expires_ms is not None and cur.expires_ms < before * 1000:
                    self.expire(cur)
                else:
                    self.seal(cur, "lost_in_restart", before)
            self.state[k] = None
        self.default = None

    def finish(self, end: float) -> None:
        for cur in self.state.values():
            if isinstance(cur, Claim) and cur.fate is None:
                if cur.expires_ms is not None and cur.expires_ms < end * 1000:
                    self.expire(cur)
                else:
                    self.seal(cur, "still_held", end)

    def cross_check_one(self, op: Op, missing: bool) -> None:
        """Check one call's reported result against what its commands did in the model
        (nothing to check when its outcome is unknown or a command of it is missing)."""
        ok = op.succeeded
        eff = self.effects.get(op.index, _NONE)
        shown = self.shown.pop(op.index, None)
        if ok is None or missing or "unknown" in eff or (not ok and not eff):
            return      # (a call that reported failure and did nothing agrees with the audit)
        said = f"{op.attempt} {op.f} reported {op.type} {str(op.value).lower() if op.type == 'ok' else ''}".rstrip()
        if op.f == "acquire":
            if ok and "created" not in eff and "extended_own" not in eff:
                self.out.disagreements.append(f"{said}, but the audit shows no successful create")
                self.out.unmatched_wins += 1
                if len(self.out.unmatched_first) < 3:
                    what = "; ".join(shown) if shown else "no command at all"
                    self.out.unmatched_first.append(
                        f"{op.attempt} acquire at {op.invoke_time / 1e9:.3f} s reported a win; the audit "
                        f"shows {what}, none of which created a claim")
            elif not ok and "created" in eff:
                self.out.disagreements.append(f"{said}, but its SET created a claim in the audit "
                                              "(a client retry?)")
        elif op.f == "release":
            if ok and not eff & {"removed_own", "removed_foreign"}:
                self.out.disagreements.append(f"{said}, but the audit shows it removed nothing")
            elif not ok and "removed_own" in eff:
                self.out.disagreements.append(f"{said}, but the audit shows it removed its own claim")
        elif op.f == "renew":
            # A renew's command that shortened (or expired) a claim found the key and changed
            # its expiry just as an extension does: the store answered 1 all the same.
            if ok and not eff & {"extended_own", "extended_foreign", "removed_own", "removed_foreign"}:
                self.out.disagreements.append(f"{said}, but the audit shows no extension")
            elif not ok and "extended_own" in eff:
                self.out.disagreements.append(f"{said}, but the audit shows it extended its claim")


def _proves_removal(op: Op | None) -> bool:
    """Only a release or renewal answering True proves its command found the key there."""
    return op is not None and op.f in ("release", "renew") and op.type == "ok" and op.value is True


def _client_says_present(op: Op | None, claim: Claim, c: _Cmd | None = None) -> bool | None:
    """What the client's result implies about the claim being present, when it implies anything."""
    ok = op.succeeded if op is not None else None
    if ok is None:
        return None
    if op.f == "acquire":
        # Only a conditional create's result says anything about the key: an acquire whose
        # command overwrites unconditionally (SET without NX) succeeds whether or not a claim
        # is there.
        return not ok if c is None or _conditional_create(c.rec.argv) else None
    if op.f not in ("release", "renew"):
        return None        # a sink write says nothing about the claim
    return ok if op.attempt == claim.owner else None


def _conditional_create(argv: list[str]) -> bool:
    """SET ... NX or SETNX: a write that succeeds only when the key is absent."""
    name = argv[0].upper() if argv else ""
    return name == "SETNX" or (name == "SET" and any(a.upper() == "NX" for a in argv[3:]))


def _first_key(rec: AuditRecord) -> str | None:
    """The first key a command names: a script call's first KEYS entry, else its first argument."""
    argv = rec.argv
    if rec.name in _SCRIPTS:
        return argv[3] if len(argv) > 3 and argv[2].isdigit() and int(argv[2]) > 0 else None
    return argv[1] if len(argv) > 1 else None


def _int(s: str) -> int:
    try:
        return int(s)
    except ValueError:
        raise ValueError(f"{s!r} is not an integer") from None


def _set(sim: _Sim, c: _Cmd) -> None:
    argv, t = c.rec.argv, c.t_ms
    if (len(argv) == 6 and argv[3] == "NX" and argv[4] == "PX" and argv[5][:1] in _NONZERO
            and argv[5].isdigit()):
        # The common case, short: a conditional create against a claim that is live, cannot
        # have been evicted and is far from its expiry fails and changes nothing (as `write`).
        cur = sim.state.get((c.rec.db, argv[1]), sim.default)
        if (type(cur) is Claim and not cur.evictable and cur.expires_ms is not None
                and cur.expires_ms - t > sim.trust_ms):
            return
    if len(argv) < 3:
        raise ValueError("wrong number of arguments")
    opts, i, expires = set(), 3, None
    while i < len(argv):
        a = argv[i].upper()
        if a in ("EX", "PX", "EXAT", "PXAT"):
            n = _int(argv[i + 1])
            if n <= 0:
                raise ValueError("invalid expire time")
            expires = {"EX": t + n * 1000, "PX": t + n, "EXAT": n * 1000, "PXAT": n}[a]
            i += 2
            continue
        if a not in ("NX", "XX", "GET", "KEEPTTL"):
            raise ValueError(f"unknown SET option {a}")
        opts.add(a)
        i += 1
    if {"NX", "XX"} <= opts:
        raise ValueError("NX and XX together")
    sim.write(c, argv[1], nx="NX" in opts, xx="XX" in opts, expires=expires, keepttl="KEEPTTL" in opts)


def _setex(sim: _Sim, c: _Cmd) -> None:
    n = _int(c.rec.argv[2])
    if n <= 0:
        raise ValueError("invalid expire time")
    sim.write(c, c.rec.argv[1], expires=c.t_ms + n * (1000 if c.rec.name == "SETEX" else 1))


def _expire(sim: _Sim, c: _Cmd) -> None:
    argv, name = c.rec.argv, c.rec.name
    n = _int(argv[2]) * (1000 if name in ("EXPIRE", "EXPIREAT") else 1)
    new = n if name.endswith("AT") else c.t_ms + n
    sim.set_expiry(c, argv[1], new, argv[3].upper() if len(argv) > 3 else "")


def _getex(sim: _Sim, c: _Cmd) -> None:
    argv, t = c.rec.argv, c.t_ms
    if len(argv) < 3:
        return
    a = argv[2].upper()
    if a == "PERSIST":
        sim.set_expiry(c, argv[1], None)
    else:
        n = _int(argv[3])
        sim.set_expiry(c, argv[1], {"EX": t + n * 1000, "PX": t + n, "EXAT": n * 1000, "PXAT": n}[a])


def _delete(sim: _Sim, c: _Cmd) -> None:
    keys = c.rec.argv[1:] if c.rec.name in ("DEL", "UNLINK") else c.rec.argv[1:2]
    for key in keys:
        if sim.follows(c, key):
            sim.delete(c, key)


_HANDLERS = {
    "SET": _set,
    "SETNX": lambda sim, c: sim.write(c, c.rec.argv[1], nx=True),
    "GETSET": lambda sim, c: sim.write(c, c.rec.argv[1]),
    "SETEX": _setex, "PSETEX": _setex,
    "DEL": _delete, "UNLINK": _delete, "GETDEL": _delete,
    "EXPIRE": _expire, "PEXPIRE": _expire, "EXPIREAT": _expire, "PEXPIREAT": _expire,
    "PERSIST": lambda sim, c: sim.set_expiry(c, c.rec.argv[1], None),
    "GETEX": _getex,
    "FLUSHDB": lambda sim, c: sim.flush(c), "FLUSHALL": lambda sim, c: sim.flush(c),
}
_SCRIPTS = {"EVAL", "EVALSHA", "EVAL_RO", "EVALSHA_RO", "FCALL", "FCALL_RO"}
_ANY_KEY = {"DEL", "UNLINK", "FLUSHDB", "FLUSHALL"}  # handlers that find their own keys
_READ_ONLY = {"GET", "MGET", "EXISTS", "TTL", "PTTL", "EXPIRETIME", "PEXPIRETIME", "TYPE", "STRLEN",
              "GETRANGE", "SUBSTR", "OBJECT", "DUMP", "TOUCH", "ECHO", "WATCH", "SCAN", "KEYS",
              "EVAL", "EVALSHA", "EVAL_RO", "EVALSHA_RO", "FCALL", "FCALL_RO", "SCRIPT", "MEMORY"}
