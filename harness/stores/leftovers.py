"""Remove what a run left in a store it does not own (``--store-url``).

Leases keep claims under keys of their own making — an application namespace
(``app-locks:<job key>``), a library's prefix (``lock:<job key>``, ``redlock:<job key>``), side
keys (``lock-signal:<job key>``), fencing counters (``fence:{<job key>}``) — and the sink keeps
effects under ``leasecheck-sink:<run id>:``. Every job key starts with the run's own prefix
(``leasecheck:<run id>:``), so each such key *contains* it; keys that do not contain the run's
prefix or sink prefix belong to someone else and are never touched. Runs after the audit has
ended, so the deletes are not mistaken for lease calls. A store the harness started is thrown
away whole instead.
"""
from __future__ import annotations

import redis

BATCH = 500


def glob_literal(text: str) -> str:
    """`text` as a literal inside a Redis glob pattern."""
    return "".join("\\" + ch if ch in "*?[]\\" else ch for ch in text)


def patterns(key_prefix: str, run_id: str) -> list[str]:
    return [f"*{glob_literal(key_prefix)}*", f"leasecheck-sink:{glob_literal(run_id)}:*"]


def remove_run_keys(client: redis.Redis, key_prefix: str, run_id: str) -> int:
    """Delete this run's keys (see the module docstring); returns how many were deleted."""
    return sum(delete_matching(client, pattern) for pattern in patterns(key_prefix, run_id))


def delete_matching(client: redis.Redis, pattern: str) -> int:
    """Delete every key matching the glob ``pattern`` (SCAN, then UNLINK in batches); how many."""
    removed, batch = 0, []
    for key in client.scan_iter(match=pattern, count=1000):
        batch.append(key)
        if len(batch) >= BATCH:
            removed += client.unlink(*batch)
            batch = []
    if batch:
        removed += client.unlink(*batch)
    return removed
