"""Everything the harness writes and the checker reads, named once.

The harness (``harness/``, ``workloads/``) writes a run directory; the checker (``checkers/``)
reads it, possibly a later version reading an older run. Both sides import these names from here
and from nowhere else — this module imports nothing of either, so the checker never loads the
harness to know what a marker looks like. docs/history.md is the contract in words.
"""
from __future__ import annotations

import re

# -- versions ------------------------------------------------------------------------------------
HISTORY_SCHEMA_VERSION = 1   # run_start.schema_version; the checker refuses a newer history

# -- the store's audit (MONITOR) ------------------------------------------------------------------
# ``ECHO leasecheck:conn:<conn>`` opens each worker connection: the audit lines from that address
# that follow are that connection's commands, numbered in the order sent (leasecheck.harness.record.connection).
CONN_MARKER = "leasecheck:conn:"
# ``ECHO leasecheck:audit-end``: the last line of a complete audit (leasecheck.harness.record.audit.finish).
AUDIT_END_MARKER = "leasecheck:audit-end"
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
# Operation types of a lease call (Jepsen's): invoked, then ok (happened), fail (certainly did
# not) or info (unknown: it may take effect at any later time).
INVOKE, OK, FAIL, INFO = "invoke", "ok", "fail", "info"
# A command a lease's own thread sent after its call returned (`leasecheck.harness.record.connection`): credited to
# that call (attempt, f, invoked = its invocation's time) by the checker (`leasecheck.checkers.model.nodes`).
LATE_SENT = "late_sent"
# Events of the run and its processes.
RUN_START, RUN_END = "run_start", "run_end"
WORKER_START, WORKER_END, SLOT_CRASH = "worker_start", "worker_end", "slot_crash"
JOB_START, JOB_END, EFFECT, LEASE_ERROR = "job_start", "job_end", "effect", "lease_error"
# Events of the nemesis: each fault starts and ends (with what it measured), or never fired.
FAULT_START, FAULT_END, FAULT_NOT_FIRED = "fault_start", "fault_end", "fault_not_fired"
# A fault may judge its own effect in ``fault_end.measured`` (``took_effect``: true / false / null,
# ``why``) when the checker has no rule of its own for that fault kind.
MEASURED_TOOK_EFFECT, MEASURED_WHY = "took_effect", "why"

# -- keys ---------------------------------------------------------------------------------------
def key_prefix(run_id: str) -> str:
    """Every key a run's lease writes starts with this (the checker follows them all)."""
    return f"leasecheck:{run_id}:"


# -- several store nodes (--topology redlock) ------------------------------------------------------
# Every node's files carry its name (leasecheck.harness.stores.node.NodeFiles); a worker connection to one node
# among several is named ``<conn>@<node>`` in its marker and in the history's ``sent`` entries.
NODE_SEPARATOR = "@"


def node_audit(node: str) -> str:
    return f"audit-{node}.log"


def node_clock(node: str) -> str:
    return f"store-clock-{node}.jsonl"


def node_of_conn(conn: str) -> str | None:
    """``node2`` for ``w0.s0.c3@node2``; None for a connection of a single store."""
    _, sep, node = conn.rpartition(NODE_SEPARATOR)
    return node if sep else None


ROLE_TARGETS = ("primary", "replica")
SENTINEL_SERVICE = "leasecheck"   # --topology replicated: the name the Sentinels know the primary by   # --topology replicated: the node in that role when the fault starts


def is_node(target) -> bool:
    """Whether a fault's target names one store node (``node1``, ``node2``, ...; or, in a replicated
    run, ``primary``/``replica``: the node in that role when the fault starts): it acts there as
    its ``store`` target does on a single store (``clock:node3``, ``pause:node2``, ``pause:primary``)."""
    return isinstance(target, str) and (target in ROLE_TARGETS or (target.startswith("node") and target[4:].isdigit()))


def on_store(target) -> bool:
    """A fault target acting on a store: ``store`` or a node's name."""
    return target == "store" or is_node(target)
