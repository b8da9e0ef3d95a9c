"""Early loss: the store broke the lease's promise.

A lease promises its holder the key until a deadline: the TTL after the acquire was *invoked*
(or after the invocation of the holder's latest successful renewal). The invocation is stamped
before the first byte is sent, so the store wrote the claim later than that, and — while its
clock keeps time — expires it later still. So when another attempt starts a run of the same job
while the holder's job still runs and *before* that deadline, the holder's claim was gone early:
the store lost it. That is not "the job took too long" (an overlap past the deadline, which a
holder token cannot prevent and `--max-overlap` judges); it breaks the promise every lease makes,
and fails the run whatever `--max-overlap` says.

What the store did to the holder's claim (its fate in the store model) names the cause:

- ``clock_jump``: it expired early — the store's clock was stepped forward or ran fast (Redis
  keeps expiries as wall-clock times);
- ``renewal_missed``: the holder's deadline runs from a renewal that returned success but did
  not extend this claim — no call of the holder's extended it, or only earlier ones: by then the
  claim had expired, and the renewal extended whatever held the key (another attempt's claim),
  or its commands went elsewhere. The lease promised a claim it no longer had;
- ``short_expiry``: the lease itself wrote an expiry shorter than the TTL it was given (the
  create's expiry, or the last renewal's, measured from the store time of the command that wrote
  it);
- ``eviction``: the store evicted it (memory pressure);
- ``store_restart``: the store restarted without it (a volatile store comes back empty);
- ``failover``: a replica that never had it was promoted (``--topology replicated``: the claim was
  ``lost_in_failover``, `leasecheck.checkers.measures.failover`, which measures these losses from each node's audit:
  the newcomer's time there is its winning acquire's completion);
- ``undecided``: the claim could not be followed (a gap in the audit): counted, not a failure.

Without the audit there are no claims to follow, and nothing is judged here.

A claim removed by another attempt's command is a foreign release, reported as such, not here;
an acquire that won without creating a claim is judged by the evidence rule, not here.

The allowance: the deadline is taken ``2 ms + 1 % of the TTL`` early. Redis keeps expiries in
whole milliseconds (up to 1 ms early), and a machine's wall clock — which the store expires
claims by — can run ahead of its monotonic clock while it is being corrected: 0.5 % was
measured on a 2-core cloud machine for minutes at a time (3 s leases then expire 15 ms early).
A clock jump, an eviction or a restart lose claims far earlier than that.
Every time here is on the history clock (``CLOCK_MONOTONIC``, which no clock fault moves).
"""
from __future__ import annotations

import bisect
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import Any

from leasecheck.checkers.model.claims import Claim
from leasecheck.checkers.model.clock import StoreClock
from leasecheck.checkers.read.jobs import JobRun
from leasecheck.checkers.read.ops import Op
from leasecheck.events import OK, RENEW

CAUSES = ("clock_jump", "short_expiry", "renewal_missed", "eviction", "store_restart", "failover")
_BY_FATE = {"evicted": "eviction", "lost_in_restart": "store_restart"}
ALLOWANCE_MS = 2.0
ALLOWANCE_SHARE = 0.01
EXAMPLES = 5


def allowance_ms(ttl_ms: float) -> float:
    return ALLOWANCE_MS + ALLOWANCE_SHARE * ttl_ms


class Promises:
    """Feed completed lease calls; keeps, per attempt, the invocation and completion times of its
    successful renewals (each moves the deadline it was promised)."""

    def __init__(self) -> None:
        self.renewals: dict[str, list[tuple[int, int, int]]] = {}   # attempt -> (invoked, done, op index)

    def feed(self, op: Op) -> None:
        if op.f == RENEW and op.type == OK and op.value is True and op.end_time is not None:
            self.renewals.setdefault(op.attempt, []).append((op.invoke_time, op.end_time, op.index))

    def promise(self, claim: Claim, at: int) -> tuple[Any, int | None]:
        """Where the deadline of `claim` runs from at history time `at`: the invocation of the
        call that created it, or of its holder's latest renewal sent after that and completed
        successfully before `at`; and that renewal (its op index; None: the create)."""
        best: Any = claim.born_ns       # (an int: the claims asked about were born in the history)
        by: int | None = None
        for invoked, done, index in self.renewals.get(claim.owner, ()):
            if invoked > best and done <= at:
                best, by = invoked, index
        return best, by


@dataclass
class EarlyLoss:
    holder: str
    newcomer: str
    job_key: str
    claim: Claim | None
    cause: str
    promised_from: int     # history ns
    deadline: int          # history ns (the TTL after `promised_from`, less the allowance)
    newcomer_start: int    # history ns: the newcomer's job started here, before the deadline


@dataclass
class EarlyLossResult:
    losses: list[EarlyLoss] = field(default_factory=list)   # one per claim lost early
    undecided: int = 0

    def to_dict(self) -> dict:
        by = Counter(x.cause for x in self.losses)
        return {"count": len(self.losses), "by_cause": {c: by.get(c, 0) for c in CAUSES},
                "undecided": self.undecided,
                "first": [{"holder": x.holder, "newcomer": x.newcomer, "job_key": x.job_key,
                           "claim_key": x.claim.name if x.claim else None, "cause": x.cause,
                           "newcomer_start_s": round(x.newcomer_start / 1e9, 3),
                           "deadline_s": round(x.deadline / 1e9, 3)} for x in self.losses[:EXAMPLES]]}


def early_losses(runs: dict[str, JobRun], promises: Promises, claims: list[Claim] | None,
                 ttl_ms: float | None) -> EarlyLossResult:
    """Every holder whose job still ran, within its lease, when another attempt started the same
    job — with what the store did to the holder's claim."""
    out = EarlyLossResult()
    if not ttl_ms:
        return out
    ttl_ns = int(ttl_ms * 1e6)
    slack_ns = int(allowance_ms(ttl_ms) * 1e6)
    by_owner: dict[str, list[Claim]] = defaultdict(list)
    for c in claims or ():
        if c.owner is not None:
            by_owner[c.owner].append(c)
    by_key: dict[str, list[JobRun]] = defaultdict(list)
    for run in runs.values():
        by_key[run.key].append(run)
    seen: set[tuple[str, int | None]] = set()
    for key_runs in by_key.values():
        key_runs.sort(key=lambda r: r.start)
        starts = [r.start for r in key_runs]
        for i, holder in enumerate(key_runs):
            # newcomers: runs of the same job that started while `holder` ran
            stop = holder.end if holder.end is not None else None
            j = i + 1
            hi = len(key_runs) if stop is None else bisect.bisect_left(starts, stop, lo=j)
            for newcomer in key_runs[j:hi]:
                if newcomer.attempt == holder.attempt:
                    continue
                claim = _claim_at(by_owner.get(holder.attempt), newcomer.start, by_owner.get(newcomer.attempt))
                if claim is None:
                    continue       # no claim of the holder's in the audit (or no audit)
                since, renewal = promises.promise(claim, newcomer.start)
                deadline = since + ttl_ns - slack_ns
                if newcomer.start >= deadline:
                    continue       # past the holder's deadline: an ordinary overlap
                cause = _cause(claim, ttl_ms, renewal)
                ident = (holder.attempt, claim.id if claim is not None else None)
                if cause == "foreign" or ident in seen:
                    continue
                seen.add(ident)
                if cause is None:
                    out.undecided += 1
                    continue
                out.losses.append(EarlyLoss(holder.attempt, newcomer.attempt, holder.key, claim, cause,
                                            since, deadline, newcomer.start))
    out.losses.sort(key=lambda x: x.newcomer_start)
    return out


def _claim_at(mine: list[Claim] | None, at: int, theirs: list[Claim] | None) -> Claim | None:
    """The holder's claim the newcomer found gone: the holder's last claim on a key that the
    newcomer then claimed in the store (a create after it, in the store's order) before history
    time `at`. None when there is no such pair: then the newcomer did not take the key from
    the holder."""
    taken = {}
    for c in theirs or ():
        if c.born_ns is not None and c.born_ns <= at:
            taken[c.obj] = c.line
    best = None
    for c in mine or ():
        if c.born_ns is not None and c.born_ns <= at and c.obj in taken and c.line < taken[c.obj]:
            best = c
    return best


def _cause(claim: Claim, ttl_ms: float, renewal: int | None) -> str | None:
    """The cause from the claim's fate (and `renewal`, the op index of the renewal the holder's
    deadline runs from, None for its create); "foreign" and "none" are judged elsewhere; None:
    unknown."""
    if claim.fate == "foreign_release":
        return "foreign"
    if claim.fate in _BY_FATE:
        return _BY_FATE[claim.fate]
    if claim.fate in ("expired_while_held", "expired_after_job"):
        if claim.evictable:
            return "eviction"   # found gone during an eviction fault, before its expiry was due
        if renewal is not None and (claim.renewed_by is None or claim.renewed_by < renewal):
            return "renewal_missed"   # the promise the holder went by was never this claim's
        # the expiry it was created with, or a later one (its renewal's), each measured from the
        # store time of the command that wrote it: a store clock stepped back between the create
        # and a renewal (a clock fault healed) shortens no span
        spans = []
        if claim.deadline_ms is not None:
            spans.append(claim.deadline_ms - claim.created * 1000)
        if claim.expires_ms is not None:
            set_at = claim.expiry_set if claim.expiry_set is not None else claim.created
            spans.append(claim.expires_ms - set_at * 1000)
        if spans and min(spans) < ttl_ms - allowance_ms(ttl_ms):
            return "short_expiry"
        return "clock_jump"
    return None


def witness_markdown(loss: EarlyLoss, clock: StoreClock | None, faults: list[dict]) -> str:
    """The first early loss as a timeline: the holder, the newcomer, what the nemesis did, and
    the key in the store, in the same form as a foreign release's witness."""
    words = {"clock_jump": "the store's clock jumped ahead and it expired the claim early",
             "short_expiry": "the claim's expiry, as the lease wrote it, was shorter than the TTL",
             "renewal_missed": "its holder's renewal reported success but did not extend the claim, "
                               "which had expired",
             "eviction": "the store evicted the claim", "store_restart": "the store restarted empty"}
    claim = loss.claim
    key = claim.name if claim is not None else loss.job_key
    rows: list[tuple[float, str, str, str, str]] = []
    rows.append((loss.promised_from / 1e9, "acquire sent: the lease promises the key until "
                 f"{(loss.deadline / 1e9):.3f}", "—", "", f"A's claim on `{key}`"))
    if claim is not None and claim.ended is not None and clock is not None:
        lost = clock.to_history_ns(claim.ended)
        if loss.promised_from <= lost <= loss.newcomer_start:
            rows.append((lost / 1e9, "still working", "—", "", f"absent: {words[loss.cause]}"))
    for f in faults:
        start = f.get("start_s")
        if start is not None and loss.promised_from / 1e9 - 1 <= start <= loss.deadline / 1e9:
            node = f" ({f['node']})" if f.get("node") else ""     # a role's target: the node it acted on
            rows.append((start, "", "", f"{f.get('fault')}:{f.get('target')}{node} {_size(f)}", ""))
    rows.append((loss.newcomer_start / 1e9, "still working, within its lease",
                 "wins its own conditional create, starts the same job", "", "B's claim"))
    rows.append((loss.deadline / 1e9, "its deadline only now", "still working", "", ""))
    rows.sort(key=lambda r: r[0])
    head = (f"## Early loss on `{key}`\n\nThe store lost attempt {loss.holder}'s claim before the "
            f"lease's deadline ({words[loss.cause]}); attempt {loss.newcomer} then ran the same job "
            f"({loss.job_key}) while {loss.holder} was still working within its lease.\n\n")
    table = [f"| Time (s) | Worker A ({loss.holder}) | Worker B ({loss.newcomer}) | Nemesis | The key in the store |",
             "|---|---|---|---|---|"]
    table += [f"| {t:.3f} | {a} | {b} | {n} | {k} |" for t, a, b, n, k in rows]
    return head + "\n".join(table) + "\n"


def _size(fault: dict) -> str:
    req = fault.get("requested") or {}
    size = req.get("size")
    if fault.get("fault") == "clock" and isinstance(size, (int, float)):
        return f"jumps {size:+.3f} s"
    return "starts"
