"""Everything the harness writes and the checker reads, named once.

The harness (``harness/``, ``workloads/``) writes a run directory; the checker (``checkers/``)
reads it, possibly a later version reading an older run. Both sides import these names from here,
from ``leasecheck.events`` (the history's events: types, fields, one line's encoding) and from
``leasecheck.rundir`` (the run directory's files and their JSON), and from nowhere else — none of
the three imports anything of either side, so the checker never loads the harness to know what a
marker looks like. docs/history.md is the contract in words, docs/schemas/ its JSON Schemas.
"""
from __future__ import annotations

import re
from typing import Final

# Re-exported for older imports: the history's events are leasecheck.events', the files leasecheck.rundir's.
from leasecheck.events import (  # noqa: F401
    EFFECT, FAIL, FAULT_END, FAULT_NOT_FIRED, FAULT_START, INFO, INVOKE, JOB_END, JOB_START, LATE_SENT,
    LEASE_ERROR, MEASURED_TOOK_EFFECT, MEASURED_WHY, OK, RUN_END, RUN_START, SLOT_CRASH, WORKER_END,
    WORKER_START)
from leasecheck.rundir import node_audit, node_clock  # noqa: F401

# -- versions ------------------------------------------------------------------------------------
HISTORY_SCHEMA_VERSION = 1   # run_start.schema_version; the checker refuses a newer history

# -- the store's audit (MONITOR) ------------------------------------------------------------------
# ``ECHO leasecheck:conn:<conn>`` opens each worker connection: the audit lines from that address
# that follow are that connection's commands, numbered in the order sent (leasecheck.harness.record.connection).
CONN_MARKER: Final = "leasecheck:conn:"
# Commands a connection never numbers (administrative, or hidden from MONITOR by some Redis
# version): listed in ``sent`` with seq null, and never given a number by the checker's join
# either, even by a store that does list them (Redis 6.2 lists ``HELLO``, and ``AUTH`` redacted).
UNNUMBERED: Final = frozenset({
    "CLIENT", "CONFIG", "DEBUG", "MONITOR", "SHUTDOWN", "SLAVEOF", "REPLICAOF", "SAVE",
    "BGSAVE", "BGREWRITEAOF", "ACL", "AUTH", "HELLO", "SYNC", "PSYNC", "REPLCONF", "MODULE",
    "FAILOVER", "LASTSAVE", "SLOWLOG", "LATENCY", "CLUSTER", "MIGRATE", "RESTORE-ASKING",
})
# What redis-py may send on a new connection before the marker (its handshake: ``HELLO``,
# ``AUTH``, ``CLIENT SETNAME``/``SETINFO``/``MAINT_NOTIFICATIONS``, ``SELECT`` for a db other than
# 0, ``PING`` of a health check). Such a line that comes right before a marker from the same
# address is the new connection's, not the previous one's on that address (docs/history.md).
HANDSHAKE: Final = frozenset({"HELLO", "AUTH", "CLIENT", "SELECT", "PING"})
# ``ECHO leasecheck:harness:<role>`` opens each of the harness's own connections to a store (a
# fault's probe, the admin connection, the nemesis's markers): the address it comes from is no
# longer a worker connection's, and its lines are the harness's (leasecheck.harness.record.own).
HARNESS_MARKER: Final = "leasecheck:harness:"
# ``ECHO leasecheck:audit-end``: the last line of a complete audit (leasecheck.harness.record.audit.finish).
AUDIT_END_MARKER: Final = "leasecheck:audit-end"
# ``ECHO leasecheck:audit-drain:<n>``: the recorder has read everything sent before it.
AUDIT_DRAIN_MARKER = "leasecheck:audit-drain:"
# Lines the recorder writes itself into audit.log:
AUDIT_GAP = "# gap"          # ``# gap <reason>``: the reader was disconnected, lines are missing
AUDIT_RESTART = "# restart"  # ``# restart <reason>``: the store was killed on purpose, after a drain
AUDIT_END = "# end"          # the recorder stopped after the end marker


def fault_marker(n: int, fault: str, edge: str) -> str:
    """``ECHO leasecheck:fault:<n>:<fault>:start|end`` around the n-th fault of the schedule,
    where the store can answer (the checker reads eviction windows from them)."""
    return f"leasecheck:fault:{n}:{fault}:{edge}"


def fault_marker_pattern(fault: str) -> re.Pattern:
    """Matches the markers of ``fault``; group 1 is ``start`` or ``end``."""
    return re.compile(rf"^leasecheck:fault:\d+:{re.escape(fault)}:(start|end)$")


# -- the history (history.jsonl) -------------------------------------------------------------------
# The event types: leasecheck.events (imported above).

# -- keys ---------------------------------------------------------------------------------------
def key_prefix(run_id: str) -> str:
    """Every key a run's lease writes starts with this (the checker follows them all)."""
    return f"leasecheck:{run_id}:"


# -- several store nodes (--topology redlock) ------------------------------------------------------
# Every node's files carry its name (leasecheck.harness.stores.node.NodeFiles); a worker connection to one node
# among several is named ``<conn>@<node>`` in its marker and in the history's ``sent`` entries.
NODE_SEPARATOR = "@"


# node_audit, node_clock: the files are leasecheck.rundir's (imported above).


def node_of_conn(conn: str) -> str | None:
    """``node2`` for ``w0.s0.c3@node2``; None for a connection of a single store."""
    _, sep, node = conn.rpartition(NODE_SEPARATOR)
    return node if sep else None


ROLE_TARGETS = ("primary", "replica")
SENTINEL_SERVICE = "leasecheck"   # --topology replicated: the name the Sentinels know the primary by


def is_node(target) -> bool:
    """Whether a fault's target names one store node (``node1``, ``node2``, ...; or, in a replicated
    run, ``primary``/``replica``: the node in that role when the fault starts): it acts there as
    its ``store`` target does on a single store (``clock:node3``, ``pause:node2``, ``pause:primary``)."""
    return isinstance(target, str) and (target in ROLE_TARGETS or (target.startswith("node") and target[4:].isdigit()))


def on_store(target) -> bool:
    """A fault target acting on a store: ``store`` or a node's name."""
    return target == "store" or is_node(target)
