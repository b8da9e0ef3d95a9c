"""Holder tokens must be fresh for every claim attempt (a token fixed per worker —
host name, process id — lets a leftover release match a newer claim).

From the store model: the value each claim was created with (`SET key VALUE ...`).
A value that two or more different attempts' claims carried is a reused token — also when the
two claims never met, because the next time they might. This is
the one place tokens are compared, and only to report reuse; attribution (who removed whose
claim) never looks at them.
"""
from __future__ import annotations

from dataclasses import dataclass

from leasecheck.checkers.model.claims import Claim
from leasecheck.rundir import AUDIT


@dataclass
class TokenReuse:
    tokens: int          # distinct values written by more than one attempt
    attempts: int        # attempts that wrote such a value
    example: list[str]   # the first few attempts sharing the first reused value
    line: int | None     # audit line where the reuse was first seen
    first: list[Claim] | None = None  # the first two claims that carried the same value
    value: str | None = None

    def to_dict(self) -> dict:
        return {"tokens": self.tokens, "attempts": self.attempts, "example": self.example,
                "line": self.line}


def token_reuse(claims: list[Claim]) -> TokenReuse:
    """Count token values that more than one attempt's claim was created with (`Claim.token`,
    the value of the `SET` that created it)."""
    first_claim: dict[str, Claim] = {}      # token -> the first claim created with it
    # only tokens of more than one attempt (the rare case: no list per token otherwise)
    shared: dict[str, list[str]] = {}       # token -> its attempts, in the order they first used it
    claims_of: dict[str, list[Claim]] = {}  # token -> each of those attempts' first claim with it
    first_line: dict[str, int] = {}         # token -> the line of its second attempt's claim
    for claim in sorted(claims, key=lambda c: c.line):
        owner, token = claim.owner, claim.token
        if owner is None or token is None:
            continue
        earlier = first_claim.get(token)
        if earlier is None:
            first_claim[token] = claim
            continue
        if earlier.owner == owner:
            continue
        owners = shared.get(token)
        if owners is None:
            shared[token] = [earlier.owner, owner]
            claims_of[token] = [earlier, claim]
            first_line[token] = claim.line
        elif owner not in owners:
            owners.append(owner)
            claims_of[token].append(claim)
    if not shared:
        return TokenReuse(0, 0, [], None)
    # (on a tie, the token first used first: the order the tokens were met in)
    first = min(shared, key=lambda v: (first_line[v], first_claim[v].line))
    return TokenReuse(len(shared), sum(len(o) for o in shared.values()), shared[first][:4],
                      first_line[first], claims_of[first][:2], first)


def reuse_markdown(reuse: TokenReuse, to_s) -> str | None:
    """The first reuse as a short timeline (``to_s`` converts store time to run seconds)."""
    if not reuse.first or len(reuse.first) < 2:
        return None
    a, b = reuse.first
    rows = [f"| {to_s(a.created):.3f} | claims `{a.key}` with token `{reuse.value}` | — | A's claim |",
            f"| {to_s(b.created):.3f} | — | claims `{b.key}` with the same token | B's claim, "
            "indistinguishable from A's |"]
    return "\n".join([
        "## Reused holder token", "",
        f"Attempts {a.owner} and {b.owner} created claims with the same token ({AUDIT} lines "
        f"{a.line} and {b.line}). A release that compares tokens cannot tell their claims apart: "
        "a late release of one deletes the other's claim. A token must be fresh and unguessable "
        "for every claim attempt.", "",
        f"| Time (s) | Worker A ({a.owner}) | Worker B ({b.owner}) | The key in the store |",
        "|---|---|---|---|", *rows]) + "\n"
