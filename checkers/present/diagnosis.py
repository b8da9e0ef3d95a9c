"""The plain-words diagnosis: why claims were lost, from the causes the checker measured.

"The lease is too short" is only one of the stories. A claim lost before its holder released it
(while the job ran, or between its end and the release) was lost because its deadline passed
(the job outlived the lease), because a fault paused its holder past the deadline, because the
store's clock jumped, because the store evicted it or restarted empty, or because another
attempt's command removed it — and each calls for a different fix. The sentences are built from
the result alone (`lost_while_held`, else `overlap.causes`; `early_loss` when present; the
releases that found nothing), so a stored run reads the same when checked again.
"""
from __future__ import annotations


def _n(count: int, one: str, many: str | None = None) -> str:
    return f"{count} {one if count == 1 else (many or one + 's')}"


def _holder(n: int) -> str:
    return "its holder released it" if n == 1 else "their holders released them"


_SAY = {
    "deadline_passed": lambda n: (f"{_n(n, 'claim')} reached {'its' if n == 1 else 'their'} deadline before "
                                  f"{'its' if n == 1 else 'their'} holder released {'it' if n == 1 else 'them'}, "
                                  "with no fault pausing the holder: the lease is too short for these jobs"),
    "holder_paused": lambda n: (f"{_n(n, 'claim')} ran out while a fault held {'its' if n == 1 else 'their'} "
                                "holder stopped (SIGSTOP): the holder was paused past its deadline — no "
                                "TTL covers an unbounded pause; fence the job's effects"),
    "clock_jump": lambda n: (f"{_n(n, 'claim')} expired early because the store's clock jumped forward "
                             "(the store keeps expiries as wall-clock times)"),
    "eviction": lambda n: f"the store evicted {_n(n, 'claim')} before {_holder(n)}",
    "store_restart": lambda n: f"the store restarted empty and lost {_n(n, 'claim')} before {_holder(n)}",
    "failover": lambda n: (f"{_n(n, 'claim')} {'was' if n == 1 else 'were'} lost in a failover before {_holder(n)}: "
                           "the primary acknowledged it, and the replica promoted in its place never had it "
                           "(replication is asynchronous)"),
    "foreign_release": lambda n: (f"{_n(n, 'claim')} {'was' if n == 1 else 'were'} removed by another "
                                  f"attempt's command before {_holder(n)}: the lease's release (or renewal) "
                                  "does not tell its own claim from another's"),
    "unknown": lambda n: f"{_n(n, 'claim')} {'was' if n == 1 else 'were'} lost for a reason the checker could not tell",
}
_ORDER = ("foreign_release", "clock_jump", "eviction", "store_restart", "failover", "holder_paused",
          "deadline_passed", "unknown")
_EARLY = {"clock_jump": "clock jump", "eviction": "eviction", "store_restart": "store restart"}


def diagnose(result: dict) -> list[str]:
    """The sentences of the diagnosis, most serious first; one sentence when nothing was lost."""
    out: list[str] = []
    early = result.get("early_loss") or {}
    if early.get("count"):
        by = ", ".join(f"{_EARLY.get(k, k.replace('_', ' '))} {v}"
                       for k, v in (early.get("by_cause") or {}).items() if v)
        out.append(f"the store lost {_n(early['count'], 'claim')} before {'its' if early['count'] == 1 else 'their'} "
                   f"deadline while another attempt then ran the job ({by}): the store broke the lease's "
                   "promise, which no TTL fixes")
    brains = (result.get("split_brain") or {}).get("count")
    if brains:
        out.append(f"{_n(brains, 'claim')} {'was' if brains == 1 else 'were'} created on the old primary after a "
                   "failover, before the Sentinels demoted it, while another holder held the key on the new "
                   "primary (split brain): two nodes accepted writes, which no TTL fixes; a release sent to the "
                   "new primary then finds nothing there")
    lost = result.get("lost_while_held")
    if lost is None:
        lost = (result.get("overlap") or {}).get("causes") or {}
        lost = {k: v for k, v in lost.items() if k != "unknown"}   # history only: nothing to tell
    for cause in _ORDER:
        if lost.get(cause):
            out.append(_SAY[cause](lost[cause]))
    nothing = result.get("releases_found_nothing", 0)
    if nothing and not any(lost.get(c) for c in _ORDER):
        if result.get("lost_while_held") is not None:
            out.append(f"{_n(nothing, 'release')} found nothing though the store's audit shows no claim "
                       "lost before its holder released it (the claims could not be followed)")
        else:
            faults = sorted({f.get("fault") for f in result.get("faults") or [] if f.get("fault")})
            acting = (f"; faults acted ({', '.join(faults)}), so it may be one of them" if faults else
                      " and no fault acted: the lease is likely too short for these jobs")
            several = len((result.get("audit") or {}).get("nodes") or {}) > 1
            why = ("the checker does not tell why across several masters (each master's claims are checked "
                   "for foreign releases and mutual exclusion, not for what ended them)" if several else
                   "without the store's audit the checker cannot tell why")
            out.append(f"{_n(nothing, 'release')} found nothing: the claim was gone before the job "
                       f"finished, but {why}{acting}")
    if not out:
        out.append("no claim was lost before its holder released it")
    return out + _liveness(result)


def _liveness(result: dict) -> list[str]:
    """The liveness causes in words: a call that never returned, a claim that outlived its holder,
    a claim kept alive by other attempts, a hold past --max-hold."""
    out = []
    hung = result.get("hung_calls") or {}
    for h in (hung.get("first") or [])[:1]:
        out.append(f"attempt {h.get('attempt')}'s {h.get('f')} has not returned after {h.get('running_s')} s"
                   + (f" ({hung['count'] - 1} more hung call(s))" if hung.get("count", 0) > 1 else ""))
    stuck = result.get("stuck_claims") or {}
    for st in (stuck.get("first") or [])[:1]:
        out.append(f"the claim outlived its holder by {st['stayed_s']:g} s{' or more' if st['still_held'] else ''}: "
                   f"{st['cause']} (attempt {st['attempt']}, {st['how']})")
    kept = result.get("kept_alive") or {}
    for k in (kept.get("first") or [])[:1]:
        if k.get("after_holder_s") is not None:
            out.append(f"{k['who']} kept the claim alive for {k['after_holder_s']:g} s after its holder's attempt "
                       f"ended ({k['holder_how']}; attempt {k['attempt']})")
        else:
            out.append(f"{k['who']} kept attempt {k['attempt']}'s claim alive {k['kept_s']:g} s past the expiry "
                       "its holder set")
    holds = result.get("holds") or {}
    if holds.get("over_max_hold"):
        out.append(f"a claim was held {holds['longest_s']:g} s, longer than --max-hold {holds['max_hold_s']:g} s "
                   f"(attempt {(holds.get('longest') or {}).get('attempt')}, renewals included)")
    return out
