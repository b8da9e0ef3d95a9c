"""The verdict: measure the run once, let every property judge its part, merge the parts.

`check(events, audit, config)` is pure: `measure` reads the run (history and audit side by side),
each property of `leasecheck.checkers.properties.PROPERTIES` returns its `result.Part`, and
`result.Result.merged` composes them into the one result schema (False beats "unknown" beats
True, as Jepsen's `checker/compose`). So `valid` is:

- false when the store lost a claim before the lease's deadline while another attempt then ran
  the same job (`early_loss`: the lease's promise broken, whatever `max_overlap` says),
  when any attempt released another attempt's claim (a foreign release), when two attempts
  wrote the same holder token (`tokens`), or when the overlap rate exceeds `config["max_overlap"]`
  (if that is not null);
- otherwise "unknown" when the verdict lacks evidence: no claim at all was seen in the store; an
  acquire reported a win that the audit shows created no claim (a lease whose claim the store
  never held protects nothing, and the checker would judge it on nothing); or when a foreign
  release could be hidden: there is no audit; commands sent by
  lease calls are missing from the audit (cut short, a gap, an unknown call whose command may
  still land); audit lines disagree with the history about which command was sent; a claim
  could not be followed to its end; a fault did not take effect, could not be shown to have,
  or never fired (`faults.doubts`); or the run was cut short (`interruption`);
- otherwise true.

`reasons` says why in plain English. `check_run(run_dir)` loads a run and checks it, and never
raises: a failure becomes valid "unknown" with the error in `reasons` (`failed`: the same schema).
"""
from __future__ import annotations

import contextlib
import gc

from leasecheck.checkers.measures.timeline import gathering
from leasecheck.checkers.read.digest import SCHEMA_VERSION
from leasecheck.checkers.errors import HistoryError
from leasecheck.checkers.read.history import HistoryStream
from leasecheck.checkers.read.audit import open_audit
from leasecheck.checkers.measures.measure import Measured, _Audit, measure  # noqa: F401 - _Audit: tests build engines with it
from leasecheck.checkers.model.nodes import NodeFeed, audit_summary, measure_nodes, node_names, open_node_audits
from leasecheck.checkers.properties import PROPERTIES, Properties, name
from leasecheck.checkers.result import LIVENESS, SAFETY, WARN, Part, Result
from leasecheck.checkers.read.rundir import load_config, load_store_clock
from leasecheck.events import RUN_START

# Early losses no lease can prevent: the store's clock jumped, it evicted, restarted or failed over.
STORE_CAUSES = frozenset({"clock_jump", "eviction", "store_restart", "failover"})


def check(events, audit, config: dict, clock_samples: list[dict] | None = None,
          all_witnesses: bool = False, progress=None, properties=PROPERTIES,
          parts: list | None = None, nodes: dict | None = None, timeline: list | None = None) -> dict:
    """Check one run.

    `events`: the history, read as it comes and never held whole: a `HistoryStream`, a list of
    event dicts, or any iterable that starts afresh each time it is iterated. A one-shot
    iterator (a generator) is read once, as it comes, where one pass is all the check makes (no
    audit, no nodes); with an audit or nodes the check looks ahead at the run's clock faults
    before its pass (`measure.store_clock_steps_ms`), so it refuses one (`TypeError`, before
    reading anything) rather than list it. `audit`: an `AuditStream`, or what `parse_audit`/`load_audit` return
    (None: no audit). `clock_samples`: the `store-clock.jsonl` samples (without them the offset
    is estimated in a first, join-only pass). `progress()`, when given, is called every few ten
    thousand records read. The history and the audit are read side by side (`engine`); memory
    holds the claims, the job runs and the calls in flight. `properties`: the checkers to run
    (`leasecheck.checkers.properties.PROPERTIES`), each judging its part of the result. `parts`, when
    given, receives `(name, Part)` per property (its module's name), for reports that show each
    property on its own (JUnit). `nodes`: a run of several store nodes, each node's audit and
    clock samples (`nodes.open_node_audits`); `audit` is then None and each node is measured on
    its own (`nodes.measure_nodes`). `timeline`, when given, receives what the HTML report draws
    of the history (`measures.timeline.Timeline.drawing`), gathered in the same pass.
    The cyclic garbage collector is paused while it runs (`cycles_paused`).
    """
    with cycles_paused():
        return _check(events, audit, config, clock_samples, all_witnesses, progress, properties, parts, nodes,
                      timeline)


@contextlib.contextmanager
def cycles_paused():
    """Python's cyclic garbage collector paused, and resumed after (if it ran before). A check
    keeps every claim and job run of the run until its properties have judged them; with the
    collector on, its full collections walk all of them again and again as they grow (a third of
    the CPU of a real 1.5M-event run with 188,000 claims, bench/RESULTS.md). The check makes no
    garbage cycles per record (`tests/checkers/test_cycles.py`): reference counting frees what it
    drops, so pausing the collector costs no memory."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def _check(events, audit, config: dict, clock_samples, all_witnesses, progress, properties, parts, nodes,
           timeline) -> dict:
    if (audit is not None or nodes is not None) and one_shot(events):
        raise TypeError(f"check() got a one-shot iterator of events ({type(events).__name__}) with "
                        f"{'an audit' if audit is not None else 'store nodes'}: it reads the history twice (a "
                        "look-ahead at the clock faults, then the pass), so pass a HistoryStream(run_dir), a "
                        "list, or an object whose __iter__ starts afresh")
    drawing = gathering() if timeline is not None else contextlib.nullcontext()
    if nodes is None:
        with drawing:
            m = measure(events, audit, config, clock_samples, all_witnesses, progress)
    else:   # one pass over the history: the run's digest, and each node measured as it goes
        feed = NodeFeed(events, nodes, config)
        with drawing:       # (each node's thread gathers none)
            m = measure(feed, audit, config, clock_samples, all_witnesses, progress)
        m.nodes, m.holds = measure_nodes(events, nodes, config, measured_first=feed), feed.holds.result()
    found = _measured(m)
    judged, failing = [], []
    for prop in properties:
        applies = getattr(prop, "applies", None)
        if applies is not None and not applies(m):
            continue        # not a property of this kind of run: no part, no JUnit case
        part = prop.check(m, found)
        part.kind = getattr(prop, "KIND", SAFETY)
        strays = [f for f in part.fields if f not in prop.FIELDS]
        if strays:
            owners = ", ".join(f"{f} belongs to {properties.owner(f) or 'no property'}" for f in strays)
            raise KeyError(f"property {name(prop)} wrote fields it does not own ({owners})")
        judged.append(part)
        if part.failures and not (part.kind == LIVENESS and liveness_mode(config) == WARN):
            failing.append(name(prop))   # a liveness warning is nobody's failure
        found.update(part.fields)
        if parts is not None:
            parts.append((name(prop), part))
    out = Result.merged(SCHEMA_VERSION, judged, properties.fields(), properties.certainty(),
                        liveness=liveness_mode(config), failure_of=failure_of(failing, found),
                        **_measured(m)).to_dict()
    if timeline is not None:
        d = m.digest
        timeline.append(d.timeline.drawing(d.end or 0, m.faults(), d.span.end, d.count,
                                           victims=out.get("foreign_releases_first") or [],
                                           key_prefix=str(config.get("key_prefix") or "")))
    return out


def one_shot(events) -> bool:
    """Whether `events` can be iterated only once (a generator, an iterator): it is its own
    iterator."""
    return iter(events) is events


def failure_of(failing: list[str], found: dict) -> str | None:
    """Whose finding a failed run is: ``"store"`` when its only failing property is early loss and
    every early loss has a cause of the store's (`STORE_CAUSES`: the promise every lease makes,
    broken by the store's configuration or its faults), ``"lease"`` for any other failure, None
    when nothing failed."""
    if not failing:
        return None
    causes = {c for c, n in ((found.get("early_loss") or {}).get("by_cause") or {}).items() if n}
    return "store" if failing == ["early_loss"] and causes and causes <= STORE_CAUSES else "lease"


def liveness_mode(config: dict | None) -> str:
    """What liveness findings do to the run (config ``liveness``): ``fail`` (the default) or ``warn``."""
    return WARN if (config or {}).get("liveness") == WARN else "fail"


def _measured(m: Measured) -> dict:
    """The fields of the result that are measurements of the run, judged by no property."""
    digest = m.digest
    fields = {"ops": digest.completed, "duration_s": (digest.end - digest.start) / 1e9,
              "problems": digest.problems + m.problems}
    if m.model is not None:
        fields["audit"] = {"present": True, "complete": m.audit.complete, "lines": m.audit.lines,
                           "unattributed": m.joined.unattributed}
        fields["disagreements"] = m.joined.disagreements + m.model.disagreements
    elif m.nodes is not None:
        fields["audit"] = audit_summary(m.nodes, node_names(m.config), m.config.get("topology") == "replicated")
        fields["problems"] = fields["problems"] + [p for n in m.nodes for p in n.problems]
        fields["disagreements"] = [d for n in m.nodes for d in n.disagreements]
    return fields


def check_run(run_dir, all_witnesses: bool = False, strict: bool = False, progress=None,
              parts: list | None = None, liveness: str | None = None, timeline: list | None = None) -> dict:
    """Read the run in `run_dir` and check it, streaming its history and audit. Never raises —
    errors become valid "unknown" — except, with `strict`, `HistoryError` for a missing or empty
    history (the caller's mistake). `progress(done, total)`, when given, is called now and then
    with the bytes read so far and the bytes to read (history and audit). `parts`: as in `check`
    (left empty when the run could not be checked). `liveness` (``fail`` or ``warn``), when given,
    replaces the run's own config ``liveness``: what a liveness finding does to this verdict.
    `timeline`: as in `check`, with the history's problems and its size (``history_bytes``: the
    report takes it only for the same history)."""
    try:
        history = HistoryStream(run_dir)
        audit = open_audit(run_dir)
        total = history.total_bytes + (audit.total_bytes if audit is not None else 0)

        def report():
            progress(min(total, history.bytes_read + (audit.bytes_read if audit is not None else 0)), total)
        tick = report if progress is not None else None
        config, more = load_config(run_dir, lambda: history.scan(RUN_START.encode())[:1])
        if liveness is not None:
            config = {**config, "liveness": liveness}
        samples, clock_problems = load_store_clock(run_dir)
        nodes = open_node_audits(run_dir, config) if node_names(config) else None
        drawn: list = []
        result = check(history, audit, config, clock_samples=samples, all_witnesses=all_witnesses,
                       progress=tick, parts=parts, nodes=nodes, timeline=drawn if timeline is not None else None)
        result["problems"] = history.problems + more + clock_problems + result["problems"]
        if timeline is not None:
            timeline += [printable(dict(t, problems=list(history.problems), history_bytes=history.total_bytes))
                         for t in drawn]
        if tick is not None:
            progress(total, total)
        return printable(result)
    except HistoryError as e:
        if strict:
            raise
        if parts is not None:
            parts.clear()
        return failed(f"the checker could not check {run_dir}: HistoryError: {e}")
    except Exception as e:  # noqa: BLE001 - a crashing checker must yield "unknown", not a crash
        if parts is not None:
            parts.clear()
        return printable(failed(f"the checker could not check {run_dir}: {type(e).__name__}: {e}"))


def printable(value):
    """``value`` with every string made printable UTF-8: the audit keeps a byte that is not UTF-8
    as a surrogate escape (``audit.py``), which a terminal, a UTF-8 file or a strict JSON parser
    refuses; in the result it reads as ``\\xNN``."""
    if isinstance(value, str):
        try:
            value.encode("utf-8")
            return value
        except UnicodeEncodeError:
            return value.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    if isinstance(value, dict):
        return {printable(k): printable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [printable(v) for v in value]
    return value


def failed(reason: str, properties: Properties = PROPERTIES) -> dict:
    """A result for a run that could not be checked at all: the same schema, nothing measured,
    nothing certain."""
    return Result.merged(SCHEMA_VERSION, [Part(doubts=[reason])], properties.fields(),
                         properties.certainty()).to_dict()
