"""Measure a run once, for every property to judge: read the history (and the audit, through the
join and the store model, side by side — `engine`) and keep what the properties read.

`measure(events, audit, config, ...)` returns a `Measured`: the history's digest (job runs, lease
calls, faults, the run's span), and with an audit the model's claims (`claims.ClaimsResult`),
the join and the store clock; without one, those are None. Nothing is judged here.
"""
from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

from leasecheck.protocol import on_store

from leasecheck.checkers.read.audit import AuditStream
from leasecheck.checkers.model.claims import TRUST_CLIENT_MS, ClaimsResult
from leasecheck.checkers.model.clock import StoreClock
from leasecheck.checkers.read.digest import Digest
from leasecheck.checkers.model.engine import Engine
from leasecheck.checkers.errors import CheckError
from leasecheck.checkers.measures.fault_windows import FaultWindows
from leasecheck.checkers.read.history import HistoryStream
from leasecheck.checkers.model.join import Join
from leasecheck.checkers.read.ops import Op
from leasecheck.events import FAULT_START, TYPE


@dataclass
class Measured:
    """What the run did, as measured: the input of every property."""
    config: dict
    digest: Digest
    audit: "_Audit | None" = None
    clock: StoreClock | None = None
    joined: Join | None = None
    model: ClaimsResult | None = None      # the store model's claims (None without an audit)
    remaining: list[Op] = field(default_factory=list)   # calls the engine did not settle
    events: object = None                  # the history (for a few look-ups by type)
    all_witnesses: bool = False
    problems: list[str] = field(default_factory=list)   # the audit's, the clock's, the join's, the model's
    nodes: list | None = None              # several store nodes: each one's claims (nodes.NodeMeasure)
    failover: object = None                # a replicated run's failovers, measured once (leasecheck.checkers.measures.failover)
    holds: list | None = None              # several store nodes: every won acquire's hold (mutual_exclusion.Holds)
    claim_spans: list | None = None        # the claims on the history clock, once a property asked (measures.liveness)

    @property
    def jobs(self):
        return self.digest.jobs.runs

    @property
    def end(self) -> int:
        return self.digest.end

    @property
    def claims(self):
        """The claims the audit showed, or None without an audit."""
        return self.model.claims if self.model is not None else None

    def faults(self) -> list[dict]:
        return self.digest.faults.summary()

    def windows(self) -> FaultWindows:
        """The faults of the run on the history's time axis (read to its end by now)."""
        return FaultWindows(self.digest.faults.summary(), self.digest.span.pids, self.digest.end or 0)

    def to_history(self):
        """Store time (s) -> history time (ns), or None without an audit."""
        return self.clock.to_history_ns if self.clock is not None else None


def measure(events, audit, config: dict, clock_samples: list[dict] | None = None,
            all_witnesses: bool = False, progress=None, copy_owner=None,
            clock_steps_ms: list[float] | None = None, on_model=None) -> Measured:
    """Read the run (see the module docstring); CheckError when the config names no key prefix,
    HistoryError when the history is empty. `copy_owner`: on a replica, whose claim each copy of
    its primary's is (`nodes.CopyOwners`). `clock_steps_ms`: the sizes of the run's steps to the
    store's clock, when the caller looked them up already (else they are, ahead of the pass).
    `on_model(claims, clock)`: told the store model's `ClaimsResult` (filled as the pass goes) and
    the store clock, before the pass (`nodes.NodeFeed`).
    `events` is read as it comes and never held whole: a one-shot iterator (a generator) only
    with `clock_steps_ms` given (else the look-ahead needs a second pass: `TypeError`). Without
    usable clock samples the offset is estimated from the history's first events
    (`ESTIMATE_EVENTS`, the first `ESTIMATE_COMMANDS` joined commands), which are kept for the
    pass to read again: the history is read once."""
    if audit is None:
        digest = Digest().consume(_records(events), progress)
        require_prefix(config)
        return Measured(config, digest, events=events, all_witnesses=all_witnesses)
    audit = _Audit.of(audit)
    clock_problems: list[str] = []
    clock = StoreClock.from_samples(clock_samples or [])
    if clock_steps_ms is None and iter(events) is events:
        raise TypeError(f"measure() got a one-shot iterator of events ({type(events).__name__}) and no "
                        "clock_steps_ms: the look-ahead at the clock faults would need a second pass")
    # Looked up before the pass, which then reads the file the look-ahead opened (`HistoryStream.scan`).
    steps = clock_steps_ms if clock_steps_ms is not None else store_clock_steps_ms(events)
    source = _records(events)
    if clock is None:       # estimated from the history's first events, kept for the pass
        source = _Prefix(events)
        clock = _estimate_clock(source, audit, clock_problems)
    engine = Engine(source, audit, progress)
    digest = engine.start()
    prefix = require_prefix(config)
    trust = max([TRUST_CLIENT_MS] + [1.5 * s for s in steps])
    told = None if on_model is None else (lambda out: on_model(out, clock))
    joined, model, remaining = engine.replay(clock, prefix, trust, replication_addresses(config), copy_owner, told)
    problems = audit.problems + clock_problems + joined.problems + model.problems
    return Measured(config, digest, audit, clock, joined, model, remaining, events, all_witnesses, problems)


def _records(events):
    """What the pass reads: a run's history with its common lines as typed records
    (`HistoryStream.records`); any other iterable of events as it is."""
    return events.records() if isinstance(events, HistoryStream) else events


def replication_addresses(config: dict) -> frozenset[str]:
    """Where a replica of a replicated run sees its primary's commands come from: each node's peer
    address (``store_nodes[].peer_port``; ``leasecheck.harness.stores.replication``). Empty for other runs."""
    return frozenset(f"127.0.0.1:{n['peer_port']}" for n in config.get("store_nodes") or []
                     if isinstance(n, dict) and n.get("peer_port"))


def require_prefix(config: dict) -> str:
    prefix = config.get("key_prefix")
    if not isinstance(prefix, str) or not prefix:
        raise CheckError(f"config has no usable key_prefix ({prefix!r}): cannot tell this run's keys")
    return prefix


class _Audit:
    """An audit to read record by record, as often as needed: an `AuditStream`, or records
    already in memory. `complete`, `problems` and `lines` hold after a full pass."""

    def __init__(self, records=None, complete=False, problems=None, stream: AuditStream | None = None):
        self.records, self.stream = records, stream
        self._complete, self._problems = complete, problems or []

    @classmethod
    def of(cls, audit) -> "_Audit":
        if isinstance(audit, _Audit):
            return audit
        if isinstance(audit, AuditStream):
            return cls(stream=audit)
        records, complete, problems = audit
        return cls(records, complete, problems)

    def __iter__(self):
        return iter(self.stream if self.stream is not None else self.records)

    @property
    def complete(self) -> bool:
        return self.stream.complete if self.stream is not None else self._complete

    @property
    def problems(self) -> list[str]:
        return self.stream.problems if self.stream is not None else self._problems

    @property
    def lines(self) -> int:
        if self.stream is not None:
            return self.stream.lines
        return sum(r.kind == "cmd" for r in self.records)


# Without clock samples the offset is estimated from the first joined commands: at most this many,
# from at most this many of the history's first events (kept in memory for the pass to read again).
ESTIMATE_COMMANDS = 5_000
ESTIMATE_EVENTS = 50_000


class _Prefix:
    """A history whose first events are read twice: `head()` yields up to `ESTIMATE_EVENTS` of
    them, keeping them; iterating it then yields the kept ones (dropping each as it goes) and
    the rest of the same iteration. So the history is read once, and memory holds the head."""

    def __init__(self, events) -> None:
        self.it = iter(events)
        self.kept: deque = deque()

    def head(self):
        kept, it = self.kept, self.it
        while len(kept) < ESTIMATE_EVENTS:
            e = next(it, _END)
            if e is _END:
                return
            kept.append(e)
            yield e

    def __iter__(self):
        kept = self.kept
        while kept:
            yield kept.popleft()
        yield from self.it


_END = object()


def _estimate_clock(events: _Prefix, audit: _Audit, problems: list[str]) -> StoreClock:
    """No store-clock samples: estimate the offset from the commands joined in the history's
    head (a join-only pass over it and the audit, `events.head()`), or, with nothing joined, align
    the first audit line with the first event."""
    pre = Engine(events.head(), audit)
    digest = pre.start()
    windows, first = pre.windows(ESTIMATE_COMMANDS)
    clock = StoreClock.estimate(windows)
    if clock is not None:
        problems.append(f"no store-clock samples: store times converted with an offset estimated "
                        f"from {len(windows)} joined commands")
        return clock
    problems.append("no store-clock samples and nothing joined: store times converted by aligning "
                    "the first audit line with the first history event (rough)")
    return StoreClock.fixed(round((first or 0.0) * 1e9) - digest.start)


def store_clock_steps_ms(events) -> list[float]:
    """The sizes (ms) of the steps the run made to the store's clock, looked up ahead of the
    check (the model's trust window depends on them from the first line on)."""
    starts = (events.scan(FAULT_START.encode()) if isinstance(events, HistoryStream)
              else [e for e in events if e.get(TYPE) == FAULT_START])
    return [abs((e.get("requested") or {}).get("size") or 0) * 1000 for e in starts
            if e.get(TYPE) == FAULT_START and e.get("fault") == "clock" and on_store(e.get("target"))]
