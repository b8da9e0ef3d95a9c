"""Why each overlap happened: for every job run that started while another run of the same key
was in progress, how the claim of the run already in progress had ended — which is what let the
newcomer claim the key.

- ``deadline_passed``: that claim expired while its holder still worked, after a real-time life
  of (about) the lease, with no fault pausing the holder: the lease was too short for the job;
- ``holder_paused``: the same, but a pause fault held the holder's worker stopped (SIGSTOP) when
  the deadline passed: the holder was paused past its deadline;
- ``clock_jump``: it expired while held but after much less real time than the lease — the
  store's clock was stepped forward (Redis keeps expiries as wall-clock times). Real time is
  bounded by the history clock: from the invocation of the call that created the claim to the
  completion of the call that first found it gone;
- ``foreign_release``: another attempt's command removed it (the third worker walks in);
- ``eviction``, ``store_restart``: the store dropped it;
- ``failover``: a replica that never had it was promoted (``lost_in_failover``, a replicated run);
- ``split_brain``: it was never lost — one of the two claims was created on a node that was no
  longer the primary while the other was live on the primary (`leasecheck.checkers.measures.split_brain`, a
  replicated run);
- ``unknown``: no audit, or the claim could not be followed.
"""
from __future__ import annotations

import heapq
from collections import Counter, defaultdict

from leasecheck.checkers.model.claims import Claim
from leasecheck.checkers.read.jobs import JobRun

CAUSES = ("deadline_passed", "holder_paused", "clock_jump", "foreign_release", "eviction", "store_restart",
          "failover", "split_brain", "unknown")
_BY_FATE = {"foreign_release": "foreign_release", "evicted": "eviction",
            "lost_in_restart": "store_restart", "lost_in_failover": "failover"}
EARLY = 0.8   # a claim that lived less than this share of its lease in real time expired early


def _ended(c: Claim) -> float:
    """When the claim ended (store ms: only claims that ended are compared)."""
    ended = c.ended
    return ended if ended is not None else float("-inf")


def overlap_causes(runs: dict[str, JobRun], end: int, claims: list[Claim] | None,
                   ttl_ms: float | None, paused=None, split: set[frozenset] | None = None) -> dict[str, int]:
    """Overlaps by cause. `paused(claim)`, when given, says whether the claim's holder was paused
    by a fault when it ended (`fault_windows.FaultWindows.holder_paused`); `split`, the pairs of
    attempts of a split brain."""
    last_claim: dict[str, Claim] = {}
    for c in claims or []:
        if c.owner is not None:
            last_claim[c.owner] = c
    counts: Counter = Counter({cause: 0 for cause in CAUSES})
    by_key: dict[str, list[tuple[int, int, str]]] = defaultdict(list)
    for run in runs.values():
        stop = run.end if run.end is not None else end
        by_key[run.key].append((run.start, max(run.start, stop), run.attempt))
    for spans in by_key.values():
        active: list[tuple[int, str]] = []          # (end, attempt) of runs in progress
        for start, stop, attempt in sorted(spans):
            while active and active[0][0] <= start:
                heapq.heappop(active)
            if active and split and any(frozenset((a, attempt)) in split for _, a in active):
                counts["split_brain"] += 1
            elif active:
                # the run in progress whose claim was lost most recently let this one in
                lost = [last_claim.get(a) for _, a in active]
                known = [c for c in lost if c is not None and c.ended is not None]
                claim = max(known, key=_ended) if known else None
                counts[_cause(claim, ttl_ms, paused) if claims is not None else "unknown"] += 1
            heapq.heappush(active, (stop, attempt))
    return dict(counts)


def lost_while_held(claims: list[Claim] | None, runs: dict[str, JobRun], to_history_ns,
                    ttl_ms: float | None, paused=None) -> dict[str, int] | None:
    """Claims lost before their holder released them — while its job ran, or between the job's
    end and the release — by cause (the causes above): what the releases that found nothing,
    and the overlaps, come from. Only claims whose attempt started a job before the loss count
    (an attempt that never ran a job had nothing to lose). None without the audit's claims."""
    if claims is None:
        return None
    counts: Counter = Counter({cause: 0 for cause in CAUSES})
    for c in claims:
        run = runs.get(c.owner)
        if run is None or c.ended is None or run.killed:
            continue        # (a killed holder never releases: its claim is liveness's, stuck_claims)
        if c.fate == "expired_while_held" or c.fate == "expired_after_job":
            counts[_cause(c, ttl_ms, paused)] += 1
        elif c.fate in _BY_FATE and run.start <= to_history_ns(c.ended):
            counts[_BY_FATE[c.fate]] += 1
    return dict(counts)


def _cause(claim: Claim | None, ttl_ms: float | None, paused=None) -> str:
    if claim is None:
        return "unknown"
    if claim.fate in _BY_FATE:
        return _BY_FATE[claim.fate]
    if claim.fate in ("expired_while_held", "expired_after_job"):
        if ttl_ms and claim.born_ns is not None and claim.gone_ns is not None:
            if (claim.gone_ns - claim.born_ns) / 1e6 < EARLY * ttl_ms:
                return "clock_jump"
        return "holder_paused" if paused is not None and paused(claim) else "deadline_passed"
    return "unknown"
