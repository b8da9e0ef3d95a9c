"""Cross-check every lease call's reported result against what its commands did in the store model.

The claims layer (`claims`) notes, per call, the effects its commands had on claims: `created`,
`extended_own`, `extended_foreign`, `removed_own`, `removed_foreign`, `wrote_free` / `removed_free`
(wrote / removed a value that is nobody's claim), or `unknown` (a key whose state was lost). Once a call's commands have all been applied, `check(op)` compares:

- an acquire that reported a win but created (or extended) nothing: a disagreement, and an
  acquire won without evidence of a claim (`unmatched_wins`, the first few with what the audit
  shows of their commands); a failed acquire whose SET created a claim (a client retry?);
- a release that reported success but removed nothing, or failure though it removed its claim;
- a renew that reported success but changed no expiry, or failure though it extended its claim.

Nothing is smoothed over. A call whose outcome is unknown, or whose commands are not all in the
audit, is not checked. `classify_release(op)` counts a release that found nothing by what its
first command met under its key (`FOUND_NOTHING`), from the model before that command ran.
"""
from __future__ import annotations

from typing import Any, Final

from leasecheck.checkers.read.ops import Op
from leasecheck.checkers.model.store_model import AMBIGUOUS_MS, SCRIPTS, UNKNOWN, Command, first_key, hash_fields
from leasecheck.events import ACQUIRE, FAIL, OK, RELEASE, RENEW

# What a release that found nothing met, by the three outcomes of a checked release: the key
# absent (its claim reached its deadline and nobody re-claimed it yet), another attempt's claim
# there (the token differs), or neither can be told (the key's state is lost, its claim may have
# been evicted, the release's commands are not in the audit, ...).
FOUND_NOTHING: Final = ("key_absent", "token_differs", "unknown")
_NONE: frozenset = frozenset()


def _said(op: Op) -> str:
    """What a call reported, in words (put together only for a disagreement: most calls agree)."""
    return f"{op.attempt} {op.f} reported {op.type} {str(op.value).lower() if op.type == 'ok' else ''}".rstrip()


class CallChecks:
    """Per call in flight: its effects, what a release's first command met, an acquire's commands
    as shown; `out` (a `claims.ClaimsResult`) gets the disagreements and the counts."""

    def __init__(self, out, store, following) -> None:
        self.out, self.store, self.following = out, store, following
        self.effects: dict[int, set[str]] = {}
        self.saw: dict[int, str] = {}          # release op -> what its first command met
        self.shown: dict[int, list[tuple]] = {}  # acquire op -> its commands as the audit shows them: (label, argv)

    def effect(self, c: Command, kind: str) -> None:
        op: Op | None = c.op
        if op is not None:
            self.effects.setdefault(op.index, set()).add(kind)

    def before(self, c: Command) -> None:
        """`c` (a command attributed to a call) is about to be applied: note what a release
        meets, what an acquire sent."""
        op: Op | None = c.op
        if op is None:
            return
        if op.f == RELEASE and op.index not in self.saw and c.name not in SCRIPTS:
            # (a script's line says nothing of what it meets: its first command does)
            self.saw[op.index] = self.seen_by(op, c)
        elif op.f == ACQUIRE:
            self.shows(op, c.label, c.argv)

    def shows(self, op: Op, label: str, argv: list[str]) -> None:
        """Acquire `op` sent the command `label` (`argv`): keep its first few to put into words
        when it is reported. Only a reported win is ever put into words (`check`): the commands of
        any other call (an acquire that lost, the common case) are not kept."""
        if op.type != OK:
            return
        shown = self.shown.get(op.index)
        if shown is None:
            self.shown[op.index] = [(label, argv)]
        elif len(shown) < 6:
            shown.append((label, argv))

    def seen_by(self, op: Op, c: Command) -> str:
        """What release `op`'s command `c` meets under the call's key, without changing the
        model: "key_absent", "token_differs", "own" (its own claim) or "unknown". A key (or
        hash field) holding a value that is nobody's claim counts as absent: there is no claim."""
        key: Any = first_key(c)
        if key is None or not self.following.follows(c, key):
            return "unknown"
        if c.name.startswith("H"):
            fields = hash_fields(c)
            if not fields:
                return "unknown"
            key = (key, fields[0])
        cur = self.store.peek(c.db, key)
        if cur is UNKNOWN:
            return "unknown"
        if cur is None or cur.free:
            return "key_absent"
        if cur.expires_ms is not None:
            # (the command ran up to its slack later; the expiry may be up to the entry's doubt later)
            d = c.t_ms - cur.expires_ms
            if d > AMBIGUOUS_MS + cur.doubt_ms:
                return "key_absent"
            if d >= -AMBIGUOUS_MS - c.slack_ms:
                return "unknown"          # at its expiry: the clock cannot tell
        if cur.evictable:
            return "unknown"          # it may have been evicted already
        return "own" if cur.owner == op.attempt else "token_differs"

    def classify_release(self, op: Op) -> None:
        """Count a release that found nothing by what its first command met."""
        saw = self.saw.pop(op.index, "unknown")
        if op.f == RELEASE and op.type == OK and op.value is False:
            outcome = saw if saw in FOUND_NOTHING else "unknown"
            self.out.found_nothing[outcome] += 1
            op.outcome = outcome

    def settle(self, op: Op, missing: bool = False) -> None:
        """`op`'s commands are all applied (or the audit is over): check it, forget it."""
        index: Any = op.index     # (boxed once: compiled, each dict look-up would box it again)
        if op.type == FAIL and not (self.effects and index in self.effects):
            # The most common call by far (an acquire that lost) whose commands changed nothing:
            # it agrees with the audit; forget it, as `check` and `classify_release` would.
            # (`in` and del, not pop: compiled, C calls, not method calls; an empty dict not asked)
            if self.shown and index in self.shown:
                del self.shown[index]
            if self.saw and index in self.saw:
                del self.saw[index]
            return
        self.check(op, missing)
        self.classify_release(op)
        self.effects.pop(op.index, None)

    def check(self, op: Op, missing: bool) -> None:
        """Check one call's reported result against what its commands did in the model
        (nothing to check when its outcome is unknown or a command of it is missing)."""
        ok = op.succeeded
        eff = self.effects.get(op.index, _NONE)
        shown = self.shown.pop(op.index, None)
        if ok is None or missing or "unknown" in eff or (not ok and not eff):
            return      # (a call that reported failure and did nothing agrees with the audit)
        out = self.out
        if op.f == ACQUIRE:
            if ok and "created" not in eff and "extended_own" not in eff:
                out.disagreements.append(f"{_said(op)}, but the audit shows no successful create")
                out.unmatched_wins += 1
                if len(out.unmatched_first) < 3:
                    what = ("; ".join(" ".join([label] + argv[1:2]) for label, argv in shown)
                            if shown else "no command at all")
                    out.unmatched_first.append(
                        f"{op.attempt} acquire at {op.invoke_time / 1e9:.3f} s reported a win; the audit "
                        f"shows {what}, none of which created a claim")
            elif not ok and "created" in eff:
                out.disagreements.append(f"{_said(op)}, but its SET created a claim in the audit "
                                         "(a client retry?)")
        elif op.f == RELEASE:
            if ok and not eff & {"removed_own", "removed_foreign", "removed_free"}:
                out.disagreements.append(f"{_said(op)}, but the audit shows it removed nothing")
            elif not ok and "removed_own" in eff:
                out.disagreements.append(f"{_said(op)}, but the audit shows it removed its own claim")
        elif op.f == RENEW:
            # A renew's command that shortened (or expired) a claim found the key and changed
            # its expiry just as an extension does: the store answered 1 all the same.
            if ok and not eff & {"extended_own", "extended_foreign", "removed_own", "removed_foreign"}:
                out.disagreements.append(f"{_said(op)}, but the audit shows no extension")
            elif not ok and "extended_own" in eff:
                out.disagreements.append(f"{_said(op)}, but the audit shows it extended its claim")
