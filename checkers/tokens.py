"""Holder tokens must be fresh for every claim attempt (the brief: a token fixed per worker —
host name, process id — lets a leftover release match a newer claim).

From the audit and the store model: the value each claim was created with (`SET key VALUE ...`).
A value that two or more different attempts' claims carried is a reused token — also when the
two claims never met, because the next time they might. This is
the one place tokens are compared, and only to report reuse; attribution (who removed whose
claim) never looks at them.
"""
from __future__ import annotations

from dataclasses import dataclass

from .audit import AuditRecord
from .claims import Claim


@dataclass
class TokenReuse:
    tokens: int          # distinct values written by more than one attempt
    attempts: int        # attempts that wrote such a value
    example: list[str]   # the first few attempts sharing the first reused value
    line: int | None     # audit line where the reuse was first seen

    def to_dict(self) -> dict:
        return {"tokens": self.tokens, "attempts": self.attempts, "example": self.example,
                "line": self.line}


def token_reuse(records: list[AuditRecord], claims: list[Claim]) -> TokenReuse:
    """Count token values that more than one attempt's claim was created with."""
    by_line = {r.line: r for r in records if r.kind == "cmd"}
    by_value: dict[str, list[str]] = {}
    first_line: dict[str, int] = {}
    for claim in sorted(claims, key=lambda c: c.line):
        rec = by_line.get(claim.line)
        if claim.owner is None or rec is None or len(rec.argv) < 3 or rec.argv[0].upper() != "SET":
            continue
        owners = by_value.setdefault(rec.argv[2], [])
        if claim.owner not in owners:
            owners.append(claim.owner)
            if len(owners) == 2:
                first_line[rec.argv[2]] = rec.line
    shared = {v: owners for v, owners in by_value.items() if len(owners) > 1}
    if not shared:
        return TokenReuse(0, 0, [], None)
    first = min(shared, key=lambda v: first_line[v])
    return TokenReuse(len(shared), sum(len(o) for o in shared.values()), shared[first][:4],
                      first_line[first])
