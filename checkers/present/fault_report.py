"""The faults of a run in words: one line per fault, what was asked for against what was measured,
for the terminal summary and the "Faults" section of witness.md.

Works from the result's `faults` list (fault, target, start_s, end_s, requested, measured, and —
where the harness judged it — `took_effect` and `why`) and `faults_not_fired` (scheduled faults
that never acted). Field names are shown as they come, with units read from their suffix
(`paused_s` -> "paused 1.498 s"), so a new measurement shows up without a change here.
"""
from __future__ import annotations

_UNITS = (("_ms", "ms"), ("_s", "s"))
_SIGNED = ("offset", "skew")   # fields that are steps: always with a sign
_SIZE = {"clock": "offset_s", "latency": "size_ms", "evict": "size_bytes"}   # what `size` means per fault


def _value(key: str, v) -> str:
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, (int, float)):
        unit = next((u for suffix, u in _UNITS if key.endswith(suffix)), "")
        signed = isinstance(v, float) and any(w in key for w in _SIGNED)
        text = f"{v:+.3f}" if signed else f"{v:.3f}".rstrip("0").rstrip(".") if isinstance(v, float) else str(v)
        return f"{text} {unit or ('bytes' if key.endswith('_bytes') else '')}".rstrip()
    if isinstance(v, dict):
        return ", ".join(f"{k} {_value(key, x)}" for k, x in v.items())
    if isinstance(v, (list, tuple)):
        return ", ".join(str(x) for x in v) or "none"
    return str(v)


def _name(key: str) -> str:
    for suffix, _ in _UNITS:
        if key.endswith(suffix):
            key = key[: -len(suffix)]
    return key.replace("_", " ")


def fields(d: dict | None, fault: str | None = None) -> str:
    """`{"paused_s": 1.4976, "processes": ["w0"]}` -> "paused 1.498 s; processes w0"."""
    if not d:
        return "nothing"
    size = _SIZE.get(fault or "", "size")
    return "; ".join(f"{_name(k)} {_value(size if k == 'size' else k, v)}" for k, v in d.items() if v is not None)


def when(f: dict) -> str:
    start, end = f.get("start_s"), f.get("end_s")
    if start is None:
        return "?"
    return f"{start:.3f}–{end:.3f} s" if end is not None else f"from {start:.3f} s, never healed"


def verdict(f: dict) -> str:
    """"took effect", "did not take effect: why", or "" when the run did not judge it."""
    took = f.get("took_effect")
    if took is None:
        return ""
    return "took effect" if took else f"did not take effect: {f.get('why') or 'no reason given'}"


def lines(result: dict) -> list[tuple[str, str, str]]:
    """(what and when, requested vs measured, verdict) per fault; then one per fault that never fired."""
    out = []
    for f in result.get("faults") or []:
        out.append((f"{f.get('fault')}:{f.get('target')} {when(f)}",
                    f"requested {fields(f.get('requested'), f.get('fault'))}; measured {fields(f.get('measured'))}",
                    verdict(f)))
    for f in result.get("faults_not_fired") or []:
        at = f.get("at", f.get("at_s"))
        at = f" at {at:g} s" if isinstance(at, (int, float)) else ""
        out.append((f"{f.get('fault')}:{f.get('target')}{at}", "never fired",
                    f"did not take effect: {f.get('why') or 'no reason given'}"))
    return out


def markdown(result: dict) -> str:
    """The "Faults" section of witness.md (empty when the run injected none)."""
    rows = lines(result)
    if not rows:
        return ""
    text = ["## Faults", "", "What the nemesis did, asked for against what the harness measured.", "",
            "| Fault | Requested vs measured | Took effect? |", "|---|---|---|"]
    text += [f"| {a} | {b} | {c or '—'} |" for a, b, c in rows]
    return "\n".join(text) + "\n"
