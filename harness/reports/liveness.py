"""The liveness rows of the terminal summary — hung calls, stuck claims, claims with no expiry,
claims kept alive by another attempt, recovery time and the longest hold — and the two verdicts,
safety and liveness, side by side."""
from __future__ import annotations

from rich.markup import escape

from leasecheck.checkers.measures.hung_calls import innermost


def rows(table, result: dict) -> None:
    hung = result.get("hung_calls")
    if isinstance(hung, dict):
        table.add_row("hung calls", _hung(hung))
    stuck = result.get("stuck_claims")
    if isinstance(stuck, dict):
        table.add_row("stuck claims", _stuck(stuck, result.get("no_expiry") or {}))
    kept = result.get("kept_alive")
    if isinstance(kept, dict):
        table.add_row("kept alive", _kept(kept))
    rec = result.get("recovery")
    if isinstance(rec, dict) and rec.get("count"):
        table.add_row("recovery", _recovery(rec))
    holds = result.get("holds")
    if isinstance(holds, dict) and holds.get("longest_s") is not None:
        table.add_row("longest hold", _hold(holds))


def verdicts(result: dict, words: dict) -> str:
    """'safety VALID · liveness INVALID' — or '' for a result without the two."""
    safety, live = result.get("safety"), result.get("liveness")
    if not isinstance(safety, dict) or not isinstance(live, dict):
        return ""
    def said(v):
        return words.get(v, "[bold yellow]INCONCLUSIVE[/]") if v in (True, False) else "[bold yellow]INCONCLUSIVE[/]"
    warn = ", warnings only" if live.get("mode") == "warn" else ""
    return f"safety {said(safety.get('valid'))} · liveness {said(live.get('valid'))}{warn}"


def _hung(hung: dict) -> str:
    """'0 — ...', or the first hung call: its attempt, call, running time and innermost frame."""
    if not hung.get("count"):
        return "0 — no lease call outlived the call bound (--call-timeout)"
    first = (hung.get("first") or [{}])[0]
    frame = innermost(first.get("stack") or "", 1)
    return (f"[red]{hung['count']} lease call(s) had not returned within the call bound[/] — first "
            f"{escape(str(first.get('attempt')))}'s {escape(str(first.get('f')))} after "
            f"{first.get('running_s')} s, at {escape(frame)}")


def _stuck(stuck: dict, bare: dict) -> str:
    none = bare.get("count") or 0
    tail = (f"; {none} claim(s) with no expiry, e.g. {escape(str(bare['first'][0]['attempt']))} on "
            f"{escape(str(bare['first'][0]['key']))}" if none and bare.get("first") else "")
    if not stuck.get("count"):
        return f"0 — no claim outlived its holder by more than the TTL + allowance ({stuck.get('bound_s')} s){tail}"
    s = stuck["first"][0]
    more = " or more" if s.get("still_held") else ""
    return (f"[red]{stuck['count']} claim(s) outlived their holder[/] — first {escape(str(s['attempt']))} on "
            f"{escape(str(s['key']))}, {s['stayed_s']} s{more} after {escape(str(s['how']))}: "
            f"{escape(str(s['cause']))}{tail}")


def _kept(kept: dict) -> str:
    if not kept.get("commands"):
        return "0 — no attempt lengthened the expiry of a claim it did not hold"
    k = kept["first"][0]
    return (f"[red]{kept['claims']} claim(s) kept alive by another attempt[/] ({kept['commands']} command(s)) — first "
            f"{escape(str(k['by']))}'s {escape(str(k['f']))} ({escape(str(k['command']))}) on "
            f"{escape(str(k['attempt']))}'s claim, {k['kept_s']} s past the expiry its holder set")


def _recovery(rec: dict) -> str:
    return (f"after {rec['count']} holder(s) died or hung, the key came free in {rec['median_s']} s (median), "
            f"{rec['max_s']} s at most — TTL {rec['ttl_s']:g} s, TTL + allowance {rec['bound_s']:g} s"
            + ("" if rec.get("within_bound") else " (longer: see stuck claims, or a hung holder renewing)"))


def _hold(holds: dict) -> str:
    longest = holds.get("longest") or {}
    limit = holds.get("max_hold_s")
    bound = (f"; [red]{holds['over_max_hold']} over --max-hold {limit:g} s[/]" if holds.get("over_max_hold")
             else f"; within --max-hold {limit:g} s" if limit is not None else "")
    return (f"{_secs(holds['longest_s'])} ({escape(str(longest.get('attempt')))} on {escape(str(longest.get('key')))}), "
            f"median {_secs(holds.get('median_s'))} over {holds.get('count')} claim(s){bound}")


def _secs(value) -> str:
    """A duration in seconds as it reads best: ``1.2 s``, ``0.35 ms`` (a claim of zero-length jobs
    is held well under a millisecond: "0.0 s" would hide it)."""
    if isinstance(value, (int, float)) and 0 < value < 1:
        return f"{value * 1000:.3g} ms"
    return f"{value} s"
