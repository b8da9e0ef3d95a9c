"""Several store nodes (``--topology redlock``): each node's audit, joined and modelled on its own.

Every node has its own audit (``audit-nodeK.log``) and clock samples (``store-clock-nodeK.jsonl``).
A worker's connection to a node is named ``<conn>@nodeK``, so a call's ``sent`` list says which
node each command went to. Node K is measured as a store of its own: the history with every
``sent`` list cut down to node K's entries, joined with node K's audit and replayed through the
store model with node K's clock (``measure.measure``). What is kept of it is its claims: a
claim of a multi-node attempt is then the set of (node, key) creations the attempt made.

Under ``--topology replicated`` a replica's audit also shows the commands it applies from its
primary: each claim they create is a *copy* of the primary's claim with the same key and value.
A copy belongs to the attempt whose create on a primary wrote that value (`CopyOwners`), so once
the replica is promoted its model knows whose claim each copy is — another attempt's release of
it there is a foreign release. The rule takes two passes — every node's own claims first, then
each node whose audit holds copies once more with their owners — which `NodeFeed` makes in the
one pass over the history: each node's second model asks the owners of the first ones as they go
(`_Shared`), and is kept where they are the rule's (`measure_nodes`).

The history is read once for the run and all its nodes (`NodeFeed`): each node is measured in a
thread of its own from the events handed to it as the history goes, so no node's view of the
history is ever held whole.
"""
from __future__ import annotations

import bisect
import queue
import threading
from collections import defaultdict, deque
from dataclasses import dataclass, field
from pathlib import Path

from leasecheck.protocol import node_of_conn
from leasecheck.rundir import node_audit, node_clock

from leasecheck.checkers.read.audit import AuditStream
from leasecheck.checkers.model.claims import Claim, ClaimsResult, ForeignRelease
from leasecheck.checkers.model.clock import StoreClock
from leasecheck.checkers.measures.measure import _Audit, measure, replication_addresses, store_clock_steps_ms
from leasecheck.checkers.measures.mutual_exclusion import Holds
from leasecheck.checkers.read.ops import LATE_ENTRIES
from leasecheck.checkers.read.rundir import load_store_clock
from leasecheck.events import FAIL, INFO, INVOKE, LATE_SENT, OK, TYPE


@dataclass
class NodeMeasure:
    """What node `name`'s audit showed."""
    name: str
    claims: list[Claim]
    foreign: list[ForeignRelease]
    clock: StoreClock
    complete: bool
    lines: int = 0           # command lines in its audit
    unattributed: int = 0    # command lines no lease call sent (the harness's own, markers aside)
    problems: list[str] = field(default_factory=list)
    disagreements: list[str] = field(default_factory=list)   # the join's and the model's, as on one store
    model: ClaimsResult | None = None   # the store model's whole result (a witness reads it)

    def of(self, attempt: str) -> list[Claim]:
        return [c for c in self.claims if c.owner == attempt]

    @property
    def copies(self) -> int:
        """Claims that are a replica's copies of its primary's (``--topology replicated``)."""
        return sum(c.copy for c in self.claims)


# A copy and its original are seen on two nodes' clocks, each mapped to the history's: a copy is
# taken as made by a create no later than this after it.
COPY_SLACK_NS = 50_000_000


class CopyOwners:
    """Whose claim a replica's copy is: the attempt whose own create (not a copy) of the same key
    with the same value, on any node, came last before the copy — values are fresh per attempt,
    so there is one such create unless a lease reuses its tokens."""

    def __init__(self, nodes: list["NodeMeasure"]) -> None:
        by: dict[tuple, list[tuple[int, str]]] = defaultdict(list)
        for n in nodes:
            for c in n.claims:
                if c.owner is not None and not c.copy and c.token is not None:
                    by[(c.db, c.key, c.token)].append((n.clock.to_history_ns(c.created), c.owner))
        self.by = {k: sorted(v) for k, v in by.items()}

    def __call__(self, db: int, key: str, token: str, at_ns: int) -> str | None:
        made = self.by.get((db, key, token))
        if not made:
            return None
        i = bisect.bisect_right([t for t, _ in made], at_ns + COPY_SLACK_NS)
        return made[i - 1][1] if i else None


def audit_summary(nodes: list[NodeMeasure], expected: list[str], replicated: bool = False) -> dict:
    """results.json's ``audit`` for a run of several nodes: complete only when every node's is.
    ``nodes`` has an entry per node of the run (``expected``, in node order): whether its audit
    was read and is complete, its command lines and the claims created there (None without an
    audit) — what the terminal summary's line per node shows (``node_report``). In a
    ``replicated`` run, ``copies`` says how many of those claims were copies of a primary's."""
    measured = {n.name: n for n in nodes}
    per_node = {}
    for name in expected or [n.name for n in nodes]:
        n = measured.get(name)
        per_node[name] = ({"recorded": True, "complete": n.complete, "lines": n.lines, "claims": len(n.claims)}
                          if n is not None else {"recorded": False, "complete": False, "lines": 0, "claims": None})
        if replicated:
            per_node[name]["copies"] = n.copies if n is not None else None
    return {"present": bool(nodes), "complete": bool(nodes) and all(x["complete"] for x in per_node.values()),
            "lines": sum(n.lines for n in nodes), "unattributed": sum(n.unattributed for n in nodes),
            "nodes": per_node}


def node_names(config: dict) -> list[str]:
    """The nodes a run recorded in its config (``store_nodes``); [] for a run of one store."""
    return [n["name"] for n in config.get("store_nodes") or [] if isinstance(n, dict) and "name" in n]


def open_node_audits(run_dir, config: dict) -> dict[str, tuple[AuditStream | None, list[dict]]]:
    """Each node's audit (None when missing) and clock samples, by node name."""
    out = {}
    for name in node_names(config):
        path = Path(run_dir) / node_audit(name)
        samples, _ = load_store_clock(run_dir, node_clock(name))
        out[name] = (AuditStream(path, name=node_audit(name)) if path.is_file() else None, samples)
    return out


# A command a lease's own thread sent after its call returned (`late_sent`) is joined to that call's
# completion when it comes within this much history time of it; a node's view holds its events
# back this long for that. Later ones reach the node as `late_sent` of their own, which its digest
# credits to the same attempt as a call of unknown outcome (as on one store).
LATE_WINDOW_NS = 2_000_000_000
BATCH = 2048        # events handed to a node's thread at a time
QUEUED = 8          # batches waiting for a node's thread at most: the memory of the fan-out


class NodeView:
    """The history as node ``node`` saw it, fed one event at a time (`feed` returns the events
    ready to pass on, `close` the rest): every ``sent`` list cut down to the commands sent to
    ``node``, and every lease call's outcome unknown (``info``). A multi-node call's result is
    not any one node's: an acquire that won a majority may have found the key taken here, one
    that lost may have created it here — so the store model must judge each node's commands by
    that node's audit alone, never by the call's result.

    With ``one_endpoint`` (``--topology replicated``: a lease talks to whichever node is primary)
    a call whose every command went to ``node`` keeps its outcome: its result is that node's
    answer, which the store model relies on where the audit alone cannot decide (an expiry's
    edge, an eviction window). A call that reached two nodes (retried after a failover) is
    unknown on both.

    A ``late_sent`` event (a command the lease's own thread sent after its call returned,
    ``leasecheck.harness.record.connection``) joins the ``sent`` list of the call that sent it, named by attempt,
    ``f`` and the time of its invocation (``invoked``) — also when it was written just before
    that call's completion (sent between the call's drain and its completion being written).
    Memory: the calls in flight and `LATE_WINDOW_NS` of events."""

    def __init__(self, node: str, one_endpoint: bool = False, window_ns: int | None = None) -> None:
        self.node, self.one_endpoint = node, one_endpoint
        self.window = LATE_WINDOW_NS if window_ns is None else window_ns
        self.invoked: dict[tuple, int] = {}      # (attempt, f) -> its open invocation's time
        self.early: dict[tuple, list] = {}       # late commands whose call's completion is still to come
        self.held: deque = deque()               # (event, its call when a completion): not yet passed on
        self.done: dict[tuple, dict] = {}        # (attempt, f, invoked) -> its completion, still held

    def feed(self, e: dict) -> list[dict]:
        ready = self._release(e.get("time"))     # what is now older than the window goes on first
        kind, call = e.get(TYPE), (e.get("attempt"), e.get("f"))
        if kind == INVOKE:
            self.invoked[call] = e.get("time")
        which = None
        sent = e.get("sent")
        if sent is not None:
            node = self.node
            mine = [s for s in sent if isinstance(s, list) and s and node_of_conn(str(s[0])) == node]
            if kind == LATE_SENT:
                which = call + (e.get("invoked"),)
                held = self.done.get(which)
                if held is not None:
                    if mine:
                        held["sent"] = held["sent"] + mine
                        held[LATE_ENTRIES] = held.get(LATE_ENTRIES, 0) + len(mine)
                    return ready
                if which not in self.early and not self._may_complete(which):
                    if not mine:
                        return ready
                    e = dict(e, sent=mine)           # its call's completion was passed on already
                    which = None
                else:
                    self.early.setdefault(which, []).extend(mine)
                    return ready
            else:
                here = self.one_endpoint and bool(mine) and len(mine) == sum(
                    isinstance(x, list) and bool(x) for x in sent)
                e = dict(e, sent=mine)
                if kind in (OK, FAIL, INFO):
                    which = call + (self.invoked.pop(call, None),)
                    early = self.early.pop(which, [])
                    e["sent"] = mine + early
                    if early:
                        e[LATE_ENTRIES] = len(early)
                    self.done[which] = e
                if kind in (OK, FAIL) and not here:
                    e[TYPE] = INFO
                    e.pop("value", None)
        self.held.append((e, which if kind in (OK, FAIL, INFO) else None))
        return ready + self._release(e.get("time"))

    def _may_complete(self, which: tuple) -> bool:
        """Whether the call `which` names is still open (its completion is to come)."""
        return self.invoked.get(which[:2]) == which[2]

    def _release(self, now) -> list[dict]:
        out, held = [], self.held
        if not isinstance(now, int):
            return out
        limit = now - self.window
        while held and held[0][0].get("time", 0) <= limit:
            out.append(self._pop())
        return out

    def _pop(self) -> dict:
        e, which = self.held.popleft()
        if which is not None and self.done.get(which) is e:
            del self.done[which]
        return e

    def close(self) -> list[dict]:
        return [self._pop() for _ in range(len(self.held))]


def only_node(events, node: str, one_endpoint: bool = False) -> list[dict]:
    """`NodeView`'s events of a whole history, as a list (for tests and tools: the checker streams)."""
    view = NodeView(node, one_endpoint, window_ns=1 << 62)
    out = [x for e in events for x in view.feed(e)]
    return out + view.close()


class _Shared:
    """What the models of a replicated run's nodes share in the one pass (`NodeFeed`): each
    node's first model (copies without owners) registers its creates as it makes them, and says
    how far its audit is read (`through`, the store time of the line it takes next), whether it
    waits for history (`idle`) and whether it is over (`done`); each node's second model asks
    `owner` for a copy's owner, which waits until every first model is past the copy (+
    `COPY_SLACK_NS`), over, or idle while the reader is held up by a model that waits (`stuck`:
    nothing more can come). That answer is a guess, checked against `CopyOwners` at the end."""

    def __init__(self, names: list[str], clocks: dict[str, StoreClock | None]) -> None:
        self.cond = threading.Condition()
        self.names = names
        self.clocks = clocks                       # from each node's samples (None: none)
        self.through: dict[str, float] = {}
        self.idle: set[str] = set()
        self.done: set[str] = set()
        self.waiting: set[str] = set()             # second models waiting in `owner`
        self.stuck = False
        self.models: dict[str, tuple] = {}         # name -> (its ClaimsResult, its clock)
        self.seen: dict[str, int] = {}             # name -> its claims registered so far
        self.by: dict[tuple, list[tuple[int, str]]] = defaultdict(list)

    def started(self, name: str, out: ClaimsResult, clock: StoreClock) -> None:
        with self.cond:
            self.models[name] = (out, clock)
            self.seen[name] = 0

    def at(self, name: str):
        """`rec -> None`: node `name`'s first model takes audit record `rec` next."""
        through = self.through

        def taking(rec) -> None:
            t = rec.time
            if t:
                through[name] = t
        return taking

    def set_idle(self, name: str, idle: bool) -> None:
        with self.cond:
            (self.idle.add if idle else self.idle.discard)(name)
            self.cond.notify_all()

    def over(self, name: str) -> None:
        with self.cond:
            self.done.add(name)
            self.cond.notify_all()

    def held_up(self, who: str | None, held: bool) -> None:
        """The reader could not hand a batch to `who` (held) or just did (not held)."""
        stuck = held and who in self.waiting
        if stuck != self.stuck:
            with self.cond:
                self.stuck = stuck
                self.cond.notify_all()

    def _past(self, name: str, at_ns: int) -> bool:
        if name in self.done or (name in self.idle and self.stuck):
            return True
        clock, t = self.clocks.get(name), self.through.get(name)
        return clock is not None and t is not None and t > clock.to_store_s(at_ns)

    def owner(self, me: str, db: int, key: str, token: str, at_ns: int) -> str | None:
        """`CopyOwners`'s answer from the creates registered so far (see the class docstring)."""
        limit = at_ns + COPY_SLACK_NS
        with self.cond:
            self.waiting.add(me)
            try:
                while not all(self._past(n, limit) for n in self.names):
                    self.cond.wait(0.005)
            finally:
                self.waiting.discard(me)
            for name, (out, clock) in self.models.items():
                claims, i = out.claims, self.seen[name]
                for c in claims[i:]:
                    if c.owner is not None and not c.copy and c.token is not None:
                        bisect.insort(self.by[(c.db, c.key, c.token)], (clock.to_history_ns(c.created), c.owner))
                self.seen[name] = len(claims)
            made = self.by.get((db, key, token))
        if not made:
            return None
        i = bisect.bisect_right([t for t, _ in made], limit)
        return made[i - 1][1] if i else None


class _Watched(_Audit):
    """An audit whose reader says which record its model takes next (`_Shared.at`)."""

    def __init__(self, stream: AuditStream, taking) -> None:
        super().__init__(stream=stream)
        self.taking = taking

    def __iter__(self):
        taking = self.taking
        for rec in self.stream:
            taking(rec)
            yield rec


class NodeFeed:
    """The history read once for a run of several nodes: iterating a `NodeFeed` yields every
    event (the run's own digest reads them) while each node with an audit is measured from its
    `NodeView` in a thread of its own, fed in batches as the history goes (at most `QUEUED`
    batches ahead of it: memory stays bounded), and every won acquire's hold is gathered
    (`mutual_exclusion.Holds`). After the iteration, `measured()` is each node's `NodeMeasure`.
    `copy_owner`: as in `measure` (a replicated run's second pass).

    In a replicated run each node is also measured a second time in the same pass, with its
    copies' owners (`_Shared.owner`, in a thread of its own fed the same batches): `guessed()`.
    Where those owners are the ones `CopyOwners` names from every node's first measure, that is
    the node's measure with owners, and the history needs no second pass (`measure_nodes`)."""

    def __init__(self, events, audits: dict, config: dict, copy_owner=None, only: set | None = None,
                 clock_steps_ms: list[float] | None = None) -> None:
        self.events, self.config, self.copy_owner = events, config, copy_owner
        self.nodes = [(name, audit, samples) for name, (audit, samples) in audits.items()
                      if audit is not None and (only is None or name in only)]
        self.holds = Holds(float(config.get("ttl_ms") or 0))
        self.steps = clock_steps_ms
        self._out: dict[str, NodeMeasure] = {}
        self._guessed: dict[str, NodeMeasure] = {}
        self._errors: list[BaseException] = []
        self.again: list[str] = []     # nodes `measure_nodes` measured in a second pass (none, as a rule)
        self.shared: _Shared | None = None
        if copy_owner is None and only is None and replication_addresses(config):
            self.shared = _Shared([n for n, _, _ in self.nodes],
                                  {n: StoreClock.from_samples(s or []) for n, _, s in self.nodes})

    def __iter__(self):
        if self.steps is None:
            self.steps = store_clock_steps_ms(self.events)   # the look-ahead every node's model needs
        one = self.config.get("topology") == "replicated"
        views = [NodeView(name, one) for name, _, _ in self.nodes]
        # per node: its consumers, (queue, thread, who) — the first model's and, in a replicated
        # run, the second's (`guessed`) — each handed the same batches
        consumers: list[list[tuple]] = []
        threads = []
        for n in self.nodes:
            mine = []
            for guess in ([False, True] if self.shared is not None else [False]):
                q: queue.Queue = queue.Queue(QUEUED)
                t = threading.Thread(target=self._measure, args=(n, q, guess), daemon=True,
                                     name=f"leasecheck-{n[0]}{'-owners' if guess else ''}")
                mine.append((q, t, n[0] if guess else None))
                threads.append(t)
            consumers.append(mine)
        for t in threads:
            t.start()
        batches: list[list] = [[] for _ in self.nodes]
        feed = self.holds.feed
        try:
            for e in self.events:
                feed(e)
                for view, batch, mine in zip(views, batches, consumers):
                    batch += view.feed(e)
                    if len(batch) >= BATCH:
                        ready = batch[:]
                        for q, t, who in mine:
                            self._put(q, t, ready, who)
                        batch.clear()
                yield e
            for view, batch, mine in zip(views, batches, consumers):
                ready = batch + view.close()
                for q, t, who in mine:
                    self._put(q, t, ready, who)
        finally:
            for mine in consumers:
                for q, t, who in mine:
                    self._put(q, t, None, who)            # the end of the history
            for t in threads:
                t.join()
        if self._errors:
            raise self._errors[0]

    def _put(self, q: queue.Queue, t: threading.Thread, batch, who: str | None = None) -> None:
        shared = self.shared
        while t.is_alive():
            try:
                q.put(batch, timeout=0.1 if shared is None else 0.005)
                if shared is not None:
                    shared.held_up(who, False)
                return
            except queue.Full:
                if shared is not None:
                    shared.held_up(who, True)

    def _measure(self, node: tuple, q: queue.Queue, guess: bool = False) -> None:
        name, audit, samples = node
        shared = self.shared
        first = shared is not None and not guess

        def events():
            while True:
                try:
                    batch = q.get_nowait()
                except queue.Empty:
                    if first:
                        shared.set_idle(name, True)
                    batch = q.get()
                    if first:
                        shared.set_idle(name, False)
                if batch is None:
                    return
                yield from batch
        try:
            if shared is None:
                m = measure(events(), audit, self.config, samples, copy_owner=self.copy_owner,
                            clock_steps_ms=self.steps)
            elif first:
                m = measure(events(), _Watched(audit, shared.at(name)), self.config, samples,
                            clock_steps_ms=self.steps, on_model=lambda out, clock: shared.started(name, out, clock))
            else:
                m = measure(events(), AuditStream(audit.path, audit.text, audit.name), self.config, samples,
                            copy_owner=lambda *a: shared.owner(name, *a), clock_steps_ms=self.steps)
            (self._guessed if guess else self._out)[name] = NodeMeasure(
                name, m.model.claims, m.model.foreign, m.clock, m.audit.complete, m.audit.lines,
                m.joined.unattributed, [f"{name}: {p}" for p in m.problems],
                [f"{name}: {d}" for d in m.joined.disagreements + m.model.disagreements], m.model)
        except BaseException as e:  # noqa: BLE001 - raised again in the reading thread
            self._errors.append(e)
            while q.get() is not None:   # let the reader finish
                pass
        finally:
            if first:
                shared.over(name)

    def measured(self) -> list[NodeMeasure]:
        """Each node's measure, in the order of the audits given."""
        return [self._out[name] for name, _, _ in self.nodes if name in self._out]

    def guessed(self) -> dict[str, NodeMeasure]:
        """A replicated run: each node's measure with its copies' owners as `_Shared.owner`
        guessed them in the pass (by node name)."""
        return dict(self._guessed)


def owners_agree(n: NodeMeasure, owners: CopyOwners) -> bool:
    """Whether every copy in `n` has the owner `owners` names (each copy's owner was asked once,
    when it was made, with these arguments): then `n` is the measure a pass with `owners` gives."""
    to_history = n.clock.to_history_ns
    return all(owners(c.db, c.key, c.token, to_history(c.created)) == c.owner
               for c in n.claims if c.copy and c.token is not None)


def measure_nodes(events, audits: dict, config: dict, measured_first=None) -> list[NodeMeasure]:
    """One `NodeMeasure` per node with an audit (`audits`: `open_node_audits`'s answer); on a
    replicated run, each replica's copies with their owners: a second pass over the history for
    the nodes that hold copies (see above). `measured_first`: the first pass, done by the caller
    (a `NodeFeed` it iterated); else it is done here."""
    if measured_first is None:
        feed = NodeFeed(events, audits, config)
        for _ in feed:
            pass
        measured_first = feed
    out = measured_first.measured()
    if not replication_addresses(config) or not any(n.copies for n in out):
        return out
    owners, guessed = CopyOwners(out), measured_first.guessed()
    settled = {n.name: guessed[n.name] for n in out
               if n.copies and n.name in guessed and owners_agree(guessed[n.name], owners)}
    again = {n.name for n in out if n.copies and n.name not in settled}
    measured_first.again = sorted(again)
    if again:       # a guess the pass could not confirm: those nodes measured once more
        second = NodeFeed(events, audits, config, copy_owner=owners, only=again, clock_steps_ms=measured_first.steps)
        for _ in second:
            pass
        settled.update({n.name: n for n in second.measured()})
    return [settled.get(n.name, n) for n in out]
