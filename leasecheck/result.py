"""`Result`: one checked run, as every reader of a verdict sees it.

``results.json`` is its serialisation (`Result.to_json`, `Result.load`): the checker writes it, and
the command line's summary, ``report.html``, JUnit, the pytest fixture, ``hunt``, ``shrink`` and
``matrix`` read the same object. The counts a test or a table asks for are typed attributes here;
every other field of ``results.json`` (docs/history.md describes each) is in `Result.data`.

For example::

    result = leasecheck.check("results/latest")
    assert result.valid is True, result.reasons
    print(result.verdict, result.foreign_releases, result.overlap.rate)
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any, Literal, Mapping, Union

from leasecheck.rundir import load_results, save_results

Validity = Union[bool, Literal["unknown"]]

EXIT_VALID, EXIT_INVALID, EXIT_UNKNOWN = 0, 1, 2
VERDICTS = {True: "VALID", False: "INVALID"}


@dataclass(frozen=True)
class Overlap:
    """Job runs of one key at once: ``count`` runs started while another was in progress, ``rate``
    the share of busy time with two or more holders, ``max_concurrency`` the most at once."""
    count: int = 0
    rate: float = 0.0
    max_concurrency: int = 0


@dataclass(frozen=True, repr=False)
class Result:
    """A checked run: the verdict (``valid`` is True, False or ``"unknown"``), why (``reasons``),
    the counts every report shows, and the whole ``results.json`` in ``data``. ``valid`` is the
    overall verdict, of ``safety`` and ``liveness`` together (safety's alone under ``--liveness
    warn``, liveness's findings then in ``warnings``)."""
    valid: Validity
    reasons: tuple[str, ...] = ()
    run_dir: Path | None = None
    foreign_releases: int = 0
    releases_found_nothing: int = 0
    overlap: Overlap = Overlap()
    early_loss: int = 0
    token_reuse: int = 0            # attempts that created a claim with another attempt's token
    claims_seen: int = 0
    ops: int = 0                    # lease calls recorded
    witness: str = ""               # the first witness timeline, as Markdown ("" when none)
    safety: Validity = "unknown"    # the safety verdict alone (foreign releases, early loss, ...)
    liveness: Validity = "unknown"  # the liveness verdict alone (hung calls, stuck claims, ...)
    warnings: tuple[str, ...] = ()  # liveness findings under --liveness warn (they do not fail the run)
    data: Mapping[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @property
    def exit_code(self) -> int:
        """As ``leasecheck run`` and ``leasecheck check`` exit: 0 valid, 1 invalid, 2 inconclusive."""
        return {True: EXIT_VALID, False: EXIT_INVALID}.get(self.valid, EXIT_UNKNOWN)

    @property
    def safety_verdict(self) -> str:
        """The safety verdict alone: ``VALID``, ``INVALID`` or ``INCONCLUSIVE``."""
        return _word(self.safety)

    @property
    def liveness_verdict(self) -> str:
        """The liveness verdict alone: ``VALID``, ``INVALID`` or ``INCONCLUSIVE``."""
        return _word(self.liveness)

    @property
    def verdict(self) -> str:
        """``VALID``, ``INVALID`` or ``INCONCLUSIVE``."""
        return VERDICTS.get(self.valid, "INCONCLUSIVE") if isinstance(self.valid, bool) else "INCONCLUSIVE"

    @property
    def reason(self) -> str:
        """The first reason, in one line ("" when there is none)."""
        return self.reasons[0] if self.reasons else ""

    @classmethod
    def from_json(cls, data: Mapping[str, Any], run_dir: Path | str | None = None) -> "Result":
        """The result that ``data`` (a parsed ``results.json``) serialises."""
        overlap = data.get("overlap") or {}
        witness = data.get("witness") or {}
        valid = data.get("valid", "unknown")
        return cls(
            valid=valid if valid in (True, False) else "unknown",
            reasons=tuple(str(r) for r in data.get("reasons") or ()),
            run_dir=Path(run_dir) if run_dir is not None else None,
            foreign_releases=int(data.get("foreign_releases") or 0),
            releases_found_nothing=int(data.get("releases_found_nothing") or 0),
            overlap=Overlap(count=int(overlap.get("count") or 0), rate=float(overlap.get("rate") or 0.0),
                            max_concurrency=int(overlap.get("max_concurrency") or 0)),
            early_loss=int((data.get("early_loss") or {}).get("count") or 0),
            token_reuse=int((data.get("token_reuse") or {}).get("attempts") or 0),
            claims_seen=int((data.get("claims_seen") or {}).get("count") or 0),
            ops=int(data.get("ops") or 0),
            witness=str(witness.get("markdown") or "") if isinstance(witness, Mapping) else "",
            safety=_validity(data.get("safety")),
            liveness=_validity(data.get("liveness")),
            warnings=tuple(str(w) for w in data.get("warnings") or ()),
            data=MappingProxyType(dict(data)),
        )

    @classmethod
    def load(cls, run_dir: Path | str) -> "Result":
        """The result stored in ``run_dir/results.json`` (nothing is checked again)."""
        return cls.from_json(load_results(run_dir), Path(run_dir))

    def to_json(self) -> dict:
        """``results.json``'s content: the checker's fields, as it wrote them."""
        return dict(self.data)

    def save(self, run_dir: Path | str | None = None) -> Path:
        """Write ``results.json`` into ``run_dir`` (default: the run's own directory)."""
        return save_results(Path(run_dir if run_dir is not None else self.run_dir), self.to_json())

    def __repr__(self) -> str:
        # One line, verdict and reasons first: pytest cuts a long repr in an assertion message.
        return (f"<Result valid={self.valid!r}: {'; '.join(self.reasons) or 'no reasons'} | "
                f"safety={self.safety!r} liveness={self.liveness!r} "
                f"foreign_releases={self.foreign_releases} overlap={self.overlap.count} "
                f"early_loss={self.early_loss} releases_found_nothing={self.releases_found_nothing} "
                f"claims_seen={self.claims_seen} exit_code={self.exit_code} run_dir={self.run_dir}>")

    def __str__(self) -> str:
        return self.explain()

    def explain(self) -> str:
        """The verdict, every count, the reasons and the witness on lines of their own."""
        lines = [f"valid={self.valid!r} (safety={self.safety!r} liveness={self.liveness!r}) exit_code={self.exit_code} "
                 f"foreign_releases={self.foreign_releases} "
                 f"overlap={self.overlap.count} ({self.overlap.rate:.1%} of busy time) "
                 f"early_loss={self.early_loss} releases_found_nothing={self.releases_found_nothing} "
                 f"token_reuse={self.token_reuse} claims_seen={self.claims_seen}",
                 f"run_dir: {self.run_dir}", *[f"reason: {r}" for r in self.reasons]]
        if self.witness:
            lines += ["witness:", self.witness.rstrip("\n")]
        return "\n".join(lines)


def _validity(verdict) -> Validity:
    """A ``results.json`` verdict (``{"valid": ...}``) as True, False or "unknown"."""
    valid = verdict.get("valid", "unknown") if isinstance(verdict, Mapping) else "unknown"
    return valid if valid in (True, False) else "unknown"


def _word(valid: Validity) -> str:
    return VERDICTS.get(valid, "INCONCLUSIVE") if isinstance(valid, bool) else "INCONCLUSIVE"
