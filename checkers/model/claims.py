"""The claims layer: replay the audit against the store model and follow every claim to its fate.

Three layers, one job each: `store_model` says how Redis commands change keys and expiries (no
attempts, no fates); this module says what those changes mean for claims — whose claim a key
holds, who ended it and how, whether an effect was written under a live claim; `crosscheck`
compares each call's reported result with what its commands did. `Replay` wires the three.

The keys modelled, per db, are those a lease call writes — whatever their name: a namespace such
as `app-locks:<job key>`, a library's `lock:<name>`, a key of the lease's own making — and every key
starting with the run's `key_prefix`. A key is followed from the first command of a lease call
(acquire, release, renew) that touches it; from then on every command on it is applied, whoever
sent it. Keys only other clients touch (the nemesis's fillers, another application's keys on a
shared store) and keys only a job's sink writes are left alone. Commands are applied in audit
order at the store's own times; a command run by a script uses the time of its `EVAL` line (Redis
freezes the clock for a script). A key with expiry E (ms) is gone once store time > E. Within
`AMBIGUOUS_MS` of E the clock cannot decide, so what the client saw decides when it is known: first
the command's own reply when its `sent` entry recorded one (a SET ... NX answered 1 found the key
absent, 0 found it present — per node on a run of several, where no call's result is known), else
the reported result of that command's call (an acquire that succeeded saw the key absent; a
release or renew of the claim's own attempt that succeeded saw it present); otherwise the clock
rule is applied. Further
out, up to `trust_ms` (TRUST_CLIENT_MS, or more when the run stepped the store's clock), a
client's result that *contradicts* the clock still wins. That reach grows by the command's slack
before the expiry (it may have run that much after its line: `AuditRecord.slack_ms`) and by the
claim's doubt after it (`Claim.doubt_ms`; docs/history.md, "When a command ran"). Each such case is
reported in `edges` (`expiry_edge` in the results).

A claim is held by an object: a key, or a field of a hash (`(key, field)`, `Claim.field`). A
lease call's write into an object that is absent, holds another attempt's claim (which it ends)
or holds a value nobody's claim creates a claim of the command's attempt — except that what a
release writes, or any call but an acquire of an attempt whose claim on that object has ended,
is nobody's claim (`Claim.free`, never in `claims`): a "free" marker, a counter set back to "0",
a value written back after a GETDEL. Overwriting or removing it removes no one's claim. The rules
are docs/history.md's "Claims and their owners". Its fate:

- `released_by_holder`: removed by a command of its own attempt;
- `expired_while_held`: its expiry passed while its attempt's job had started and not ended
  (history `job_start`/`job_end`; expiry converted with the store clock);
- `expired_after_job`: its expiry passed otherwise (after the job, or its attempt never ran one);
- `foreign_release`: deleted, overwritten, or had its expiry shortened, while live, by a command
  of a *different* attempt; each one is also listed in `foreign`;
- `still_held`: present at the last audit line;
- `evicted`: live during an eviction fault (between the nemesis's `ECHO leasecheck:fault:N:evict:
  start` and `...:end` markers) and later found absent by a client whose result proves it (an
  acquire that succeeded, its holder's release or renewal that found nothing, a removal that
  removed nothing). Such a claim is only called foreign-released when the remover's result
  proves it removed something;
- `lost_in_restart`: live when the store restarted (a `# restart` record): volatile, it came back
  empty;
- `lost_in_failover` (``--topology replicated`` only, sealed by `replicated.resolved_claims` across the
  nodes, never here): acknowledged by a primary that was stopped, and never had by the replica
  promoted in its place;
- `unknown`: it cannot be followed: removed by an unattributed command, owned by nobody known,
  or live when the audit had a gap.

Afterwards every call with a known result is checked against its effect in the model
(`crosscheck`): each mismatch is a `disagreements` entry. So is a conditional create whose recorded
reply the model contradicts, when its call's result is unknown. Nothing is smoothed over.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Final

from leasecheck.protocol import fault_marker_pattern

from leasecheck.checkers.read.audit import AuditRecord
from leasecheck.checkers.model.clock import StoreClock
from leasecheck.checkers.model.crosscheck import FOUND_NOTHING, CallChecks
from leasecheck.checkers.read.jobs import JobRun
from leasecheck.checkers.model.join import Join
from leasecheck.checkers.read.ops import Op
from leasecheck.rundir import AUDIT
from leasecheck.checkers.model.store_model import (AMBIGUOUS_MS, TRUST_CLIENT_MS, UNKNOWN, Command as _Cmd, Store,
                                                  conditional_create, unconditional_write)
from leasecheck.events import ACQUIRE, FAIL, F_EFFECT, OK, RELEASE, RENEW

FATES: Final = ("released_by_holder", "expired_while_held", "expired_after_job", "foreign_release",
         "evicted", "lost_in_restart", "lost_in_failover", "still_held", "unknown")
LEASE_CALLS: Final = frozenset({"acquire", "release", "renew"})   # calls whose keys the model follows
EVICT_MARK: Final = fault_marker_pattern("evict")
# Expiries are store times in ms since the epoch (about 1.8e12) as floats, so the sum of a
# command's time and its TTL carries rounding errors of ~0.1 us: two expiries closer than this
# are the same one (an audit line's time has whole microseconds).
SAME_EXPIRY_MS: Final = 0.0005
# The fate of a claim still live when the audit has a gap, the store restarts, the audit ends.
_FATE_AT: Final = {"gap": "unknown", "restart": "lost_in_restart", "end": "still_held"}

__all__ = ["AMBIGUOUS_MS", "FATES", "FOUND_NOTHING", "TRUST_CLIENT_MS", "Claim", "ClaimsResult",
           "ForeignRelease", "KeptAlive", "Replay", "simulate"]


@dataclass(slots=True, init=False)
class Claim:
    id: int
    db: int
    key: Any             # a str
    owner: Any           # the attempt (a str), or None when unknown
    op: int | None
    line: int            # audit line of the creating command
    created: float       # store time, s
    expires_ms: float | None     # the current expiry (renewals move it)
    deadline_ms: float | None = None   # the expiry it was created with (or first given by its own lease)
    fate: str | None = None
    ended: float | None = None   # store time, s, when the fate was sealed (the expiry, if it expired)
    evictable: bool = False      # live during an eviction fault: it may vanish without a command
    gone_op: int | None = None   # the call whose command first found it expired
    born_ns: int | None = None   # history time: the creating call's invocation
    gone_ns: int | None = None   # history time: the completion of the call that found it expired
    token: Any = None            # the value a SET created it with (to find reused tokens)
    copy: bool = False           # a replica's copy of its primary's claim (applied from the primary)
    field: str | None = None     # the hash field, for a claim kept as a field of hash `key`
    free: bool = False           # a value nobody's claim: what a release (or an ended claim's call) wrote
    expiry_set: float | None = None  # store time, s, of the write that gave it `expires_ms` (None: its create)
    made_ns: int | None = None   # history time: the creating call's completion (ok or fail), if it completed
    # history times of the call whose command sealed its fate (removed, overwrote, shortened it):
    # its invocation, and its completion when it completed ok or fail (the command ran in between)
    end_lo_ns: int | None = None
    end_hi_ns: int | None = None
    # how much later (ms) than `expires_ms` the store may really expire it: the slack of the
    # command that set that expiry (`AuditRecord.slack_ms`; a relative expiry counts from when
    # the command ran)
    doubt_ms: float = 0.0
    # the latest call of its owner whose command extended it (its expiry set again by the holder's
    # own write or renewal): a renewal that reported success without being this call, or an
    # earlier one, did not renew it (``early_loss``'s ``renewal_missed``)
    renewed_by: int | None = None

    def __init__(self, id: int, db: int, key: Any, owner: Any, op: int | None, line: int, created: float,
                 expires_ms: float | None, deadline_ms: float | None = None, fate: str | None = None,
                 ended: float | None = None, evictable: bool = False, gone_op: int | None = None,
                 born_ns: int | None = None, gone_ns: int | None = None, token: Any = None,
                 copy: bool = False, field: str | None = None, free: bool = False,
                 expiry_set: float | None = None, made_ns: int | None = None, end_lo_ns: int | None = None,
                 end_hi_ns: int | None = None, doubt_ms: float = 0.0, renewed_by: int | None = None) -> None:
        # Written out: compiled, a dataclass's generated __init__ is interpreted Python, and the
        # model builds one per claim.
        self.id = id
        self.db = db
        self.key = key
        self.owner = owner
        self.op = op
        self.line = line
        self.created = created
        self.expires_ms = expires_ms
        self.deadline_ms = deadline_ms
        self.fate = fate
        self.ended = ended
        self.evictable = evictable
        self.gone_op = gone_op
        self.born_ns = born_ns
        self.gone_ns = gone_ns
        self.token = token
        self.copy = copy
        self.field = field
        self.free = free
        self.expiry_set = expiry_set
        self.made_ns = made_ns
        self.end_lo_ns = end_lo_ns
        self.end_hi_ns = end_hi_ns
        self.doubt_ms = doubt_ms
        self.renewed_by = renewed_by

    @property
    def obj(self) -> tuple[str, str | None]:
        """What the claim is on: (key, None), or (hash key, field)."""
        return self.key, self.field

    @property
    def ref(self) -> Any:
        """The store model's name for it: the key, or (key, field)."""
        return self.key if self.field is None else (self.key, self.field)

    @property
    def name(self) -> str:
        """The object in words: `key`, or `key` field `f` (shown as key[f])."""
        return self.key if self.field is None else f"{self.key}[{self.field}]"


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
class KeptAlive:
    """A command of another attempt lengthened a live claim's expiry (or removed it): liveness."""
    by: str | None       # the attempt whose command did it
    by_op: int | None
    f: str | None        # the lease call that sent it (acquire, release, renew)
    claim: Claim
    command: str         # "PEXPIRE", or "EVAL: pexpire"
    old_ms: float | None     # the expiry before (store ms)
    new_ms: float | None     # after (None: no expiry any more)
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
    # releases that found nothing, by what their first command saw (crosscheck.FOUND_NOTHING)
    found_nothing: Counter = field(default_factory=lambda: Counter({k: 0 for k in FOUND_NOTHING}))
    # expiries of live claims lengthened by another attempt's command (properties/kept_alive)
    kept_alive: list[KeptAlive] = field(default_factory=list)

    def counts(self) -> dict[str, int]:
        """Claims per fate, every fate present (0 when none)."""
        c = Counter(claim.fate for claim in self.claims)
        return {fate: c.get(fate, 0) for fate in FATES}


def _command(rec: AuditRecord, t: float, attempt: str | None, op: Op | None, label: str, slack_ms: float) -> _Cmd:
    """The store model's command of audit line `rec`."""
    return _Cmd(rec.argv, rec.name, rec.db, rec.line, rec.addr, rec.reply, t, attempt, op, label, slack_ms, AUDIT)


def simulate(records: list[AuditRecord], joined: Join, ops: list[Op], jobs: dict[str, JobRun],
             clock: StoreClock, key_prefix: str, trust_ms: float = TRUST_CLIENT_MS) -> ClaimsResult:
    """Replay `records` (as `AuditStream` reads them, each with its `slack_ms`; attributed by
    `joined`) and return every claim with its fate."""
    replay = Replay(jobs, clock, key_prefix, trust_ms)
    for i, rec in enumerate(records):
        k = joined.op[i]
        replay.feed(rec, joined.attempt[i], ops[k] if k is not None else None)
    return replay.finish(joined, ops)


class Replay:
    """The store model, the claims and the cross-checks fed one audit record at a time with its
    attribution (from `Joiner`), so the audit is never held in memory. `settle(op)`
    cross-checks a call whose commands have all been applied (then forgets it); `finish(joined,
    ops)` seals the remaining claims and cross-checks the calls not settled. `need(t)`, when
    given, is called before the model looks at job runs up to history time `t` (a streaming
    check reads the history that far)."""

    def __init__(self, jobs: dict[str, JobRun], clock: StoreClock, key_prefix: str,
                 trust_ms: float = TRUST_CLIENT_MS, need=None, replicated_from: frozenset[str] = frozenset(),
                 copy_owner=None) -> None:
        self.out = ClaimsResult()
        self.following = Following(key_prefix)
        self.claims = Claims(jobs, clock, need, self.out)
        self.claims.replicated_from, self.claims.copy_owner = replicated_from, copy_owner
        self.store = Store(self.claims, self.following, trust_ms, self.out.problems)
        self.calls = CallChecks(self.out, self.store, self.following)
        self.claims.store, self.claims.calls = self.store, self.calls
        self.last_time = 0.0
        # the last non-script command's name, store time and slack (a script's commands run at its time)
        self.script_name = ""
        self.script_time = 0.0
        self.script_slack = 0.0

    def feed(self, rec: AuditRecord, attempt: str | None, op: Op | None) -> None:
        store = self.store
        if rec.kind == "gap":
            store.gap(self.last_time)
            return
        if rec.kind == "restart":
            store.restart(self.last_time)
            return
        if rec.addr != "lua":
            self.last_time = rec.time
            self.script_name, self.script_time = rec.name, rec.time   # (two fields: no tuple per line)
            self.script_slack = rec.slack_ms
            if op is not None and rec.name == "SET" and op.f == ACQUIRE:
                # Did what the client saw say the key was there (`Claims.client_view`: the line's
                # own reply if recorded, else the call's result: `succeeded` False)?
                reply = rec.reply
                seen = (not reply) if reply is not None else (op.type == FAIL or (op.type == OK and not op.value))
                if self.store.rejects_create(rec.db, rec.argv, rec.time * 1000.0, seen, rec.slack_ms):
                    # The most common line by far: an acquire's SET NX that the live claim turns
                    # away. It changes nothing; only the cross-check notes what the call sent.
                    if reply is None:
                        self.calls.shows(op, "SET", rec.argv)   # `before`'s acquire case, without a _Cmd
                        return
                    c = _command(rec, rec.time, attempt, op, "SET", rec.slack_ms)
                    self.calls.before(c)
                    self._check_reply(c, False)
                    return
            if rec.name == "ECHO" and len(rec.argv) == 2:
                m = EVICT_MARK.match(rec.argv[1])
                if m:
                    store.evicting(m.group(1) == "start")
            c = _command(rec, rec.time, attempt, op, rec.name, rec.slack_ms)
        else:
            c = _command(rec, self.script_time, attempt, op, f"{self.script_name}: {rec.argv[0]}", self.script_slack)
        if op is not None:
            if op.f == F_EFFECT and rec.addr != "lua" and rec.name.startswith("EVAL"):
                self.claims.judge_effect(c)
            self.calls.before(c)
        if rec.reply is None:
            store.apply(c)
            return
        made, lost = len(self.out.claims), store.peek(rec.db, rec.argv[1]) is UNKNOWN
        store.apply(c)
        if not lost:
            self._check_reply(c, len(self.out.claims) > made)

    def _check_reply(self, c: _Cmd, created: bool) -> None:
        """A conditional create whose reply was recorded: the model must agree with it. (Within
        `trust_ms` of an expiry the reply decided; further out a contradiction is a disagreement.)
        Only where the call's result is unknown: a known one is cross-checked as a whole."""
        op: Op | None = c.op
        if op is not None and op.succeeded is not None:
            return
        said = _reply_says_present(c)
        if said is not None and said == created:
            self.out.disagreements.append(
                f"{c.where} on {c.argv[1]} was answered {c.reply} ("
                f"{'written' if c.reply else 'not written'}), but the audit shows "
                f"{'a claim created' if created else 'the key held'} by the store clock")

    def settle(self, op: Op) -> None:
        """`op`'s commands are all applied: check its result against their effect, forget it."""
        self.calls.settle(op)

    def finish(self, joined: Join, ops) -> ClaimsResult:
        self.store.finish(self.last_time)
        for op in ops:
            self.calls.check(op, op.index in joined.missing)
            self.calls.classify_release(op)
        # The store model and the claims refer to each other (`Store.events`): with the pass
        # over, that link goes, so that reference counting frees them and all they hold once the
        # properties are done (a cycle would keep them until Python's cyclic collector walks every
        # claim: a tenth of a real run's check, bench/RESULTS.md).
        self.store.events = None
        return self.out


class Following:
    """Which keys are modelled (see the module docstring): the run's prefix, and every key a
    lease call's command has touched."""

    def __init__(self, prefix: str) -> None:
        self.prefix = prefix
        self.followed: set[tuple[int, str]] = set()

    def follows(self, c: _Cmd, key: str) -> bool:
        """Is `key` modelled? A lease call's command makes it so."""
        if key.startswith(self.prefix):
            return True
        k = (c.db, key)
        if k in self.followed:
            return True
        op: Op | None = c.op
        if op is not None and op.f in LEASE_CALLS:
            self.followed.add(k)
            return True
        return False

    def known(self, db: int, key: str) -> bool:
        """Is `key` modelled already (without making it so)?"""
        return key.startswith(self.prefix) or (db, key) in self.followed


class Claims:
    """What the store model's changes mean for claims: the `events` of `store_model.Store`.
    A lease call's write into an absent object is a claim of the command's attempt, unless
    `frees` says it is nobody's; its fate is sealed once (see the module docstring)."""

    store: Store             # wired by Replay, before the first command
    calls: CallChecks

    def __init__(self, jobs: dict[str, JobRun], clock: StoreClock, need, out: ClaimsResult) -> None:
        self.jobs, self.clock, self.need, self.out = jobs, clock, need, out
        self.noted: set[int] = set()
        # A replica's audit (--topology replicated) shows the commands it applies from its primary,
        # from the primary's address: a claim they create is a copy of the primary's (not a lost
        # attribution), and what they do to a copy is the primary's doing. A copy's owner is the
        # attempt whose create on a primary wrote its key and value: `copy_owner(db, key, value,
        # history ns)` names it (`nodes.CopyOwners`), so after a promotion the store model knows
        # whose claim the copy is (None: a copy without an owner).
        self.replicated_from: frozenset[str] = frozenset()
        self.copy_owner: Any = None
        # attempt -> its claim not yet sealed (UNKNOWN once it could not be followed): what a
        # job's sink write is judged against, whatever key the claim is on
        self.held: dict[str, Claim | object] = {}
        # (attempt, db, key or (key, field)) of every claim sealed: what such an attempt's later
        # calls write there is nobody's claim (`frees`)
        self.ended: set[tuple] = set()

    # -- what the store model asks ----------------------------------------------------------
    def client_view(self, claim: Claim, c: _Cmd) -> bool | None:
        said = _reply_says_present(c)
        return said if said is not None else _client_says_present(c.op, claim, c)

    def create_seen(self, c: _Cmd) -> bool:
        """A conditional create on a key whose state is lost: did its client see it succeed?"""
        said = _reply_says_present(c)
        if said is not None:
            return not said
        op: Op | None = c.op
        return bool(op is not None and op.f == ACQUIRE and op.succeeded)

    def result_unknown(self, c: _Cmd) -> bool:
        op: Op | None = c.op
        return _reply_says_present(c) is None and (op is None or op.succeeded is None)

    # -- what the store model reports -------------------------------------------------------
    def edge(self, claim: Claim, c: _Cmd, key, d: float, by_client: bool, gone: bool) -> None:
        if not claim.free and claim.id not in self.noted:    # report each claim's ambiguity once
            self.noted.add(claim.id)
            how = ("its reply" if _reply_says_present(c) is not None else "the client's result") \
                if by_client else "the store clock"
            self.out.edges.append(f"{c.where} on {claim.name} ran {d:+.1f} ms from the expiry of "
                                  f"{claim.owner}'s claim: {how} says it was "
                                  f"{'gone' if gone else 'present'}")

    def expired(self, claim: Claim, c: _Cmd) -> None:
        self.expire(claim)
        op: Op | None = c.op
        claim.gone_op = op.index if op is not None else None
        claim.gone_ns = op.end_time if op is not None else None

    def evicted(self, claim: Claim, c: _Cmd) -> None:
        self.seal(claim, "evicted", c.t)

    def expired_before(self, claim: Claim) -> None:
        if claim.fate is None:
            self.expire(claim)

    def vanished(self, claim: Claim, why: str, t: float) -> None:
        if claim.fate is None:
            self.seal(claim, _FATE_AT[why], t)

    def touched_unknown(self, c: _Cmd) -> None:
        self.calls.effect(c, "unknown")

    def undecidable(self, claim: Claim, c: _Cmd) -> None:
        self.calls.effect(c, "unknown")
        self.out.problems.append(f"{c.where}: a conditional create on {claim.name}, whose claim by "
                                 f"{claim.owner} an eviction fault may have removed; the call's "
                                 "outcome is unknown, so whether it created a claim cannot be decided")
        if claim.fate is None:
            self.seal(claim, "unknown", c.t)
        else:   # its fate stands (e.g. cut short by another); what the key holds now is lost
            self.out.lost_keys += 1

    def create(self, key, c: _Cmd, expires_ms: float | None) -> Claim:
        """A write stored a value in an absent key (or field: `key` is then (key, field)). It is
        a claim of the command's attempt, except a value `frees` says is nobody's."""
        hkey, fld = (key, None) if type(key) is str else key
        token = _written_value(c, fld)
        copy = c.attempt is None and c.addr in self.replicated_from
        owner = c.attempt
        op: Op | None = c.op
        if self.frees(c, key):
            self.calls.effect(c, "wrote_free")
            return Claim(-1, c.db, hkey, None, op.index if op is not None else None, c.line, c.t, expires_ms, expires_ms,
                         token=token, field=fld, free=True)
        if copy and self.copy_owner is not None and token is not None:
            owner = self.copy_owner(c.db, hkey, token, self.clock.to_history_ns(c.t))
        claim = Claim(len(self.out.claims), c.db, hkey, owner, op.index if op else None,
                      c.line, c.t, expires_ms, expires_ms, token=token,
                      born_ns=op.invoke_time if op else None, copy=copy, field=fld,
                      made_ns=_completed_at(op))
        self.out.claims.append(claim)
        if owner is not None:
            self.held[owner] = claim
        self.calls.effect(c, "created")
        if c.attempt is None and not copy:
            self.out.problems.append(f"{c.where}: claim on {claim.name} created by an unattributed command")
        return claim

    def frees(self, c: _Cmd, key) -> bool:
        """Is what `c` writes into `key` nobody's claim? It is when a release call wrote it, or
        a renew (or any call but an acquire) of an attempt whose claim on that key has ended:
        a "free" marker, a counter set back, a value written back after a GETDEL."""
        op: Op | None = c.op
        if op is None or c.attempt is None or op.f == ACQUIRE:
            return False
        return op.f == RELEASE or (c.attempt, c.db, key) in self.ended

    def written(self, key, c: _Cmd, claim: Claim, expires_ms: float | None) -> Claim:
        """A write over a present value: its own attempt's extends its claim, unless `frees`
        (then it ends it); anyone else's replaces the claim; a value nobody's claim is simply
        replaced (no one's claim is removed)."""
        if claim.free:
            return self.create(key, c, expires_ms)
        if c.attempt is not None and claim.owner == c.attempt and not self.frees(c, key):
            claim.expires_ms = expires_ms
            claim.expiry_set = c.t
            _renewed(claim, c)
            self.calls.effect(c, "extended_own")
            return claim
        self.end_by(claim, c, "overwritten")
        return self.create(key, c, expires_ms)

    def removed(self, claim: Claim, c: _Cmd, how: str) -> None:
        self.end_by(claim, c, how)

    def expiry_changed(self, claim: Claim, c: _Cmd, old: float | None, new: float | None) -> None:
        if claim.free:
            return
        claim.expiry_set = c.t
        if c.attempt is not None and c.attempt == claim.owner:
            if claim.deadline_ms is None:
                claim.deadline_ms = new     # created without one (SETNX, HSETNX), then given its deadline
            _renewed(claim, c)
            self.calls.effect(c, "extended_own")
        elif new is not None and (old is None or new < old - SAME_EXPIRY_MS):
            self.end_by(claim, c, "expiry shortened")
        else:
            self.calls.effect(c, "extended_foreign")
            if new is None and old is not None or new is not None and old is not None and new > old + SAME_EXPIRY_MS:
                self.out.kept_alive.append(KeptAlive(c.attempt, c.op.index if c.op else None,
                                                     c.op.f if c.op else None, claim, c.label, old, new,
                                                     c.t, c.line))

    # -- fates ------------------------------------------------------------------------------
    def expire(self, claim: Claim) -> None:
        if claim.free:
            return
        expires = claim.expires_ms
        assert expires is not None, "only a claim with an expiry expires"
        at = self.clock.to_history_ns(expires / 1000)
        if self.need is not None:
            self.need(at)
        job = self.jobs.get(claim.owner) if claim.owner else None
        held = job is not None and (job.end is None or at < job.end)
        self.seal(claim, "expired_while_held" if held else "expired_after_job", expires / 1000)

    def seal(self, claim: Claim, fate: str, t: float, by: Op | None = None) -> None:
        """Seal `claim`'s fate at store time `t` (once); `by`: the call whose command did it."""
        if claim.fate is None and not claim.free:
            claim.fate, claim.ended = fate, t
            if by is not None:
                claim.end_lo_ns, claim.end_hi_ns = by.invoke_time, _completed_at(by)
            if claim.owner is not None:
                self.ended.add((claim.owner, claim.db, claim.ref))
            if claim.owner is not None and self.held.get(claim.owner) is claim:
                if fate == "unknown":
                    self.held[claim.owner] = UNKNOWN
                else:
                    del self.held[claim.owner]

    def end_by(self, claim: Claim, c: _Cmd, how: str) -> None:
        """`c` removed, overwrote or shortened `claim`: decide whose doing it was."""
        op: Op | None = c.op
        if claim.free:
            self.calls.effect(c, "removed_free")   # a value nobody's claim: no one's claim ended
            return
        if c.attempt is None or claim.owner is None:
            self.calls.effect(c, "unknown")
            if claim.fate is None and not (c.addr in self.replicated_from or claim.copy):
                self.out.problems.append(f"{c.where}: {how} {claim.owner or 'an unknown owner'}'s "
                                         f"claim on {claim.name}, but the command's attempt is "
                                         f"{c.attempt or 'unknown'} (from {c.addr})")
            self.seal(claim, "unknown", c.t, op)
        elif c.attempt == claim.owner:
            self.calls.effect(c, "removed_own")
            self.seal(claim, "released_by_holder", c.t, op)
        elif claim.evictable and not _proves_removal(op):
            # It may have been evicted already: without proof that this command removed
            # something, it is no foreign release. A release or renewal that answered "nothing
            # there" shows the eviction; an overwriting SET succeeds either way, so it decides nothing.
            if op is not None and op.type in (OK, FAIL) and op.f in (RELEASE, RENEW):
                self.seal(claim, "evicted", c.t)      # (gone before the command: no bound from its call)
            else:
                self.calls.effect(c, "unknown")
                self.out.problems.append(f"{c.where}: {how} {claim.owner}'s claim on {claim.name}, which "
                                         "an eviction fault may already have removed; the call's outcome "
                                         "is unknown, so this cannot be decided")
                self.seal(claim, "unknown", c.t, op)
        else:
            self.calls.effect(c, "removed_foreign")
            if claim.fate is None:
                self.out.foreign.append(ForeignRelease(c.attempt, op.index if op else None,
                                                       claim, c.label, how, c.t, c.line))
            self.seal(claim, "foreign_release", c.t, op)

    # -- effects ----------------------------------------------------------------------------
    def judge_effect(self, c: _Cmd) -> None:
        """A job's sink write (``--sink``) ran here: was its attempt's claim still live? The
        last script call of the effect decides (an EVALSHA refused with NOSCRIPT is retried).
        The attempt's own claim is looked up by attempt: it may be on any key."""
        op: Op | None = c.op
        assert op is not None, "a sink write is a call's"
        mine = self.held.get(op.attempt)
        if mine is UNKNOWN:
            self.out.stale[op.index] = None
            return
        if not isinstance(mine, Claim):   # no claim of its own still followed: was the key's state lost?
            lost = (self.store.follows(c, op.key)
                    and self.store.peek(c.db, op.key) is UNKNOWN)
            self.out.stale[op.index] = None if lost else True
            return
        cur = self.store.live(mine.ref, c)
        self.out.stale[op.index] = None if cur is UNKNOWN else cur is not mine


def _renewed(claim: Claim, c: _Cmd) -> None:
    """Its owner's call behind `c` set the claim's expiry again."""
    op: Op | None = c.op
    if op is not None:
        claim.renewed_by = op.index


def _written_value(c: _Cmd, fld: str | None) -> str | None:
    """The value a SET/SETNX (or, for a hash field, HSET/HSETNX) stored, when the line shows it."""
    argv, name = c.argv, c.name
    if fld is None:
        return argv[2] if name in ("SET", "SETNX") and len(argv) > 2 else None
    if name in ("HSET", "HMSET", "HSETNX"):
        pairs = argv[2:]
        for i in range(0, len(pairs) - 1, 2):
            if pairs[i] == fld:
                return pairs[i + 1]
    return None


def _completed_at(op: Op | None) -> int | None:
    """The history time `op` completed ok or fail (what it did happened before then), else None."""
    return op.end_time if op is not None and (op.type == OK or op.type == FAIL) else None


def _proves_removal(op: Op | None) -> bool:
    """Only a release or renewal answering True proves its command found the key there."""
    return op is not None and op.f in (RELEASE, RENEW) and op.type == OK and op.value is True


def _reply_says_present(c: _Cmd) -> bool | None:
    """What the store's own reply to `c` says about its key being present, when the client
    recorded it: a conditional create (SET ... NX, SETNX) answered 1 found the key absent, 0
    found it present. It is this command's answer, not its call's: it beats the call's result
    (a lease over several nodes returns one result for a create on each) and is all there is on
    one node of several, where every call's result is unknown."""
    reply = c.reply
    if reply is None or not conditional_create(c.argv):
        return None
    return not reply


_DELETES: Final = frozenset({"DEL", "UNLINK"})


def _client_says_present(op: Op | None, claim: Claim, c: _Cmd | None = None) -> bool | None:
    """What the client's result implies about the claim being present, when it implies anything."""
    ok = op.succeeded if op is not None else None
    if ok is None or op is None:
        return None
    if op.f == ACQUIRE:
        # Only a conditional create's result says anything about the key: an acquire whose
        # command overwrites unconditionally (SET without NX) succeeds whether or not a claim
        # is there.
        return not ok if c is None or conditional_create(c.argv) else None
    if op.f not in ("release", "renew"):
        return None        # a sink write says nothing about the claim
    if c is not None and unconditional_write(c.argv):
        return None        # a plain SET succeeds whether or not its claim is still there
    if op.attempt == claim.owner:
        return ok
    # A release that deletes by name (its one DEL or UNLINK, of this key alone) succeeds when it
    # removed whatever the key held, whoever's claim that was.
    return ok if op.f == RELEASE and c is not None and _deletes_by_name(op, c) else None


def _deletes_by_name(op: Op, c: _Cmd) -> bool:
    """Is ``c`` a ``DEL``/``UNLINK`` of one key, the only such command ``op`` sent?"""
    if c.name not in _DELETES or len(c.argv) != 2:
        return False
    return sum(1 for s in op.sent if s[2] in _DELETES) == 1
