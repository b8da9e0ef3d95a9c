"""What the report draws of a run's history: the check's own (``timeline.json``, gathered in its
one pass over the history), or — for a run never checked, or whose history changed since — the
history read once here through the checker's digest, so the drawing follows the same rules."""
from __future__ import annotations

from pathlib import Path

from leasecheck.checkers.measures.timeline import gathering
from leasecheck.checkers.read.digest import Digest
from leasecheck.checkers.read.history import HistoryStream
from leasecheck.rundir import TIMELINE, read_object


def timeline_of(run: Path, config: dict, results: dict | None) -> dict:
    """``timeline.json`` when it was drawn from this very history (``history_bytes``), else the
    history read once (`HistoryError` when there is none)."""
    stream = HistoryStream(run)
    stored = read_object(run / TIMELINE)
    if stored is not None and stored.get("history_bytes") == stream.total_bytes and "lanes" in stored:
        return stored
    with gathering():
        d = Digest().consume(stream)
    return d.timeline.drawing(d.end or 0, d.faults.summary(), d.span.end, d.count,
                              victims=(results or {}).get("foreign_releases_first") or [],
                              problems=stream.problems, key_prefix=str(config.get("key_prefix") or ""))
