"""A run of several store nodes in words, for the terminal summary and report.html: one line per
node (`lines`), and a replicated run's failovers (`failover_line`):

    node3  31 claims, clock +10 s at 4.0 s for 2.0 s, audit complete
    node2  12 claims (9 copies of a primary's), audit complete

read from the result alone: each node's claims and audit (``audit.nodes``), the faults aimed at
it (``faults``: a target naming the node, or a role's target that acted on it — ``node``;
``store`` acts on the first node), and the releases
there that removed another attempt's claim (``mutual_exclusion.foreign_releases_per_node``; in a
replicated run the node of each in ``foreign_releases_first``).
"""
from __future__ import annotations

from typing import Callable


def lines(result: dict) -> list[str]:
    """One line per node, in node order; [] for a run of one store."""
    nodes = (result.get("audit") or {}).get("nodes") or {}
    if not nodes:
        return []
    foreign = (result.get("mutual_exclusion") or {}).get("foreign_releases_per_node") or {}
    if not foreign:   # a replicated run lists each foreign release with its node
        for f in result.get("foreign_releases_first") or []:
            if f.get("node"):
                foreign[f["node"]] = foreign.get(f["node"], 0) + 1
    width = max(len(name) for name in nodes)
    first = next(iter(nodes))
    out = []
    for name, a in nodes.items():
        said = [_claims(a)]
        said += [_fault(f) for f in result.get("faults") or []
                 if _on(f, name, first)]
        if foreign.get(name):
            said.append(f"{foreign[name]} foreign release(s)")
        said.append(_audit(a))
        out.append(f"{name.ljust(width)}  {', '.join(said)}")
    return out


def _on(f: dict, name: str, first: str) -> bool:
    """Did fault ``f`` act on node ``name``? The node it recorded (a role's target, or ``store``
    in a replicated run: the primary then), else the node its target names; ``store``: the first."""
    if f.get("node"):
        return f["node"] == name
    return f.get("target") == name or (f.get("target") == "store" and name == first)


def _claims(a: dict) -> str:
    n = a.get("claims")
    if n is None:
        return "claims unknown"
    copies = a.get("copies")      # a replicated run: how many were copies of a primary's claims
    return f"{n} claim{'' if n == 1 else 's'}" + (f" ({copies} cop{'y' if copies == 1 else 'ies'} of a primary's)"
                                                   if copies else "")


def _audit(a: dict) -> str:
    if not a.get("recorded", True):
        return "no audit"
    return "audit complete" if a.get("complete") else "audit cut short"


def _fault(f: dict) -> str:
    """``clock +10 s at 4.0 s for 2.0 s``, ``pause at 1.0 s for 0.6 s``; ``(did not take effect)``
    when the harness judged that it did not."""
    what = str(f.get("fault"))
    size = (f.get("requested") or {}).get("size")
    if what == "clock" and isinstance(size, (int, float)):
        what += f" {_num(size, signed=True)} s"
    elif what == "latency" and isinstance(size, (int, float)):
        what += f" {_num(size)} ms"
    start, end = f.get("start_s"), f.get("end_s")
    if isinstance(start, (int, float)):
        what += f" at {start:.1f} s"
        if isinstance(end, (int, float)):
            what += f" for {end - start:.1f} s"
        else:
            what += ", never healed"
    if f.get("took_effect") is False:
        what += " (did not take effect)"
    return what


def _num(x: float, signed: bool = False) -> str:
    """``+10``, ``+2.731``: at most three decimals, no trailing zeros."""
    text = f"{x:+.3f}" if signed else f"{x:.3f}"
    return text.rstrip("0").rstrip(".")


def failover_line(result: dict, mark: Callable[[str], str] = str) -> str | None:
    """``node1 -> node2 (promoted at 4.149 s); 1 claim(s) lost in failover, 1 then held by another
    attempt (early loss, cause failover)`` for a replicated run (None for others): the failovers
    from the ``failover`` field, the counts where every claim fate and early-loss cause is counted
    (``claims``, ``early_loss``). ``mark`` wraps what went wrong (the terminal colours it)."""
    fo = result.get("failover")
    if not fo:
        return None
    moves = "; ".join(f"{f['primary_before']} -> {f['promoted'] or 'nobody'}"
                      + (f" (promoted at {f['promoted_s']:.3f} s)" if f.get("promoted_s") is not None else "")
                      for f in fo.get("failovers") or []) or "no failover happened"
    lost = (result.get("claims") or {}).get("lost_in_failover", 0)
    early = ((result.get("early_loss") or {}).get("by_cause") or {}).get("failover", 0)
    if not lost:
        return f"{moves}; no acknowledged claim lost"
    return (f"{moves}; " + mark(f"{lost} claim(s) lost in failover")
            + (", " + mark(f"{early} then held by another attempt (early loss, cause failover)") if early else ""))
