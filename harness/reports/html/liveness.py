"""report.html's liveness parts: the two verdicts side by side, the liveness rows of the summary
table (hung calls, stuck claims, kept alive, recovery, the longest hold) and the hung calls with
their stacks."""
from __future__ import annotations

from leasecheck.harness.rundirs.runs import VERDICTS


def verdicts(results: dict | None) -> list[tuple[str, str]]:
    """[("safety", "VALID"), ("liveness", "INVALID")], or [] for results without them."""
    out = []
    for name in ("safety", "liveness"):
        v = (results or {}).get(name)
        if isinstance(v, dict):
            word = VERDICTS.get(v.get("valid"), "INCONCLUSIVE")
            out.append((name, word + (" (warnings only)" if v.get("mode") == "warn" and name == "liveness" else "")))
    return out


def rows(r: dict) -> list[tuple[str, str, str]]:
    """(property, verdict word, what was measured) rows of the liveness properties."""
    out = []
    hung = r.get("hung_calls")
    if isinstance(hung, dict):
        first = (hung.get("first") or [{}])[0]
        out.append(("hung calls (liveness)", "INVALID" if hung.get("count") else "held",
                    f"{hung.get('count', 0)} lease call(s) outlived the call bound"
                    + (f"; first {first.get('attempt')}'s {first.get('f')} after {first.get('running_s')} s"
                       if hung.get("count") else "")))
    stuck = r.get("stuck_claims")
    if isinstance(stuck, dict):
        bare = (r.get("no_expiry") or {}).get("count", 0)
        first = (stuck.get("first") or [{}])[0]
        out.append(("stuck claims (liveness)", "INVALID" if stuck.get("count") else "held",
                    f"{stuck.get('count', 0)} claim(s) outlived their holder by more than {stuck.get('bound_s')} s"
                    + (f"; first {first.get('attempt')}'s, {first.get('stayed_s')} s: {first.get('cause')}"
                       if stuck.get("count") else "") + f"; {bare} claim(s) with no expiry"))
    kept = r.get("kept_alive")
    if isinstance(kept, dict):
        out.append(("kept alive by another attempt (liveness)", "INVALID" if kept.get("commands") else "held",
                    f"{kept.get('claims', 0)} claim(s), {kept.get('commands', 0)} command(s)"))
    rec = r.get("recovery")
    if isinstance(rec, dict) and rec.get("count"):
        out.append(("recovery time (liveness)", "measured",
                    f"{rec['count']} holder(s) died or hung; the key came free in {rec['median_s']} s (median), "
                    f"{rec['max_s']} s at most; TTL {rec['ttl_s']} s"))
    holds = r.get("holds")
    if isinstance(holds, dict) and holds.get("longest_s") is not None:
        over = holds.get("over_max_hold")
        out.append(("longest hold (liveness)", "INVALID" if over else "measured",
                    f"{holds['longest_s']} s ({(holds.get('longest') or {}).get('attempt')}); median "
                    f"{holds.get('median_s')} s" + (f"; {over} over --max-hold {holds.get('max_hold_s')} s" if over else "")))
    return out


def hung(results: dict | None) -> list[dict]:
    """The hung calls results.json lists, each with its stack."""
    return list(((results or {}).get("hung_calls") or {}).get("first") or [])
