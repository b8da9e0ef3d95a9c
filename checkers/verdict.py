"""The verdict: put the checkers together into the `results.json` dict.

`check(events, audit, config)` is pure. `valid` is:

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
raises: a failure becomes valid "unknown" with the error in `reasons`.
"""
from __future__ import annotations

from .audit import AuditStream, open_audit
from .claims import FATES, FOUND_NOTHING, TRUST_CLIENT_MS
from .clock import StoreClock
from .digest import SCHEMA_VERSION, Digest
from .errors import CheckError, HistoryError
from .causes import lost_while_held, overlap_causes
from .diagnosis import diagnose
from .early_loss import early_losses, witness_markdown as early_loss_markdown
from .fault_windows import FaultWindows
from .effects import stale_effects
from .faults import doubts as fault_doubts
from .history import HistoryStream
from .interruption import sentence as cut_short
from .engine import Engine
from .overlap import overlap
from .tokens import reuse_markdown, token_reuse
from .rundir import load_config, load_store_clock
from .witness import build_witness, walk_ins

def check(events, audit, config: dict, clock_samples: list[dict] | None = None,
          all_witnesses: bool = False, progress=None) -> dict:
    """Check one run.

    `events`: the history — a list of event dicts or a `HistoryStream` (other iterables are
    read into a list). `audit`: an `AuditStream`, or what `parse_audit`/`load_audit` return
    (None: no audit). `clock_samples`: the `store-clock.jsonl` samples (without them the offset
    is estimated in a first, join-only pass). `progress()`, when given, is called every few ten
    thousand records read. The history and the audit are read side by side (`engine`); memory
    holds the claims, the job runs and the calls in flight.
    """
    if not isinstance(events, (list, tuple, HistoryStream)):
        events = list(events)
    clock = None
    if audit is None:
        digest = Digest().consume(events, progress)
        _require_prefix(config)
        engine = None
    else:
        audit = _Audit.of(audit)
        clock_problems: list[str] = []
        # Without samples the clock is estimated first, in a pass of its own.
        clock = StoreClock.from_samples(clock_samples or []) or _estimate_clock(events, audit, clock_problems)
        engine = Engine(events, audit, progress)
        digest = engine.start()
        prefix = _require_prefix(config)
    result = {
        "schema_version": SCHEMA_VERSION, "valid": True, "reasons": [],
        "foreign_releases": 0, "overlap": None,
        "releases_found_nothing": 0, "releases_found_nothing_rate": 0.0,
        "releases_found_nothing_outcomes": {k: 0 for k in FOUND_NOTHING},
        "releases_found_nothing_first": [],
        "releases_unknown": 0, "claims": {fate: 0 for fate in FATES},
        "ops": 0, "duration_s": 0.0,
        "audit": {"present": audit is not None, "complete": False, "lines": 0, "unattributed": 0},
        "disagreements": [], "problems": [], "witness": None, "token_reuse": None, "walk_ins": 0,
        "faults": [], "stale_effects": None, "claims_seen": None, "early_loss": None,
        "expiry_edge": {"count": 0, "examples": []},
        "certainty": {"foreign_releases": "certain (store audit)", "overlap": "certain",
                      "releases_found_nothing": "certain", "claims": "certain (store audit)"},
    }
    bad, unsure = [], []
    sim = None
    if engine is None:
        _history_only(digest, result, bad, unsure)
    else:
        result["problems"] = clock_problems
        sim = _check_audit(engine, events, prefix, clock, result, bad, unsure, all_witnesses)
    # The history is read to its end now.
    jobs, start, end, rel = digest.jobs.runs, digest.start, digest.end, digest.releases
    ov = overlap(jobs, end)
    result["problems"] = digest.problems + result["problems"]
    if sim is not None:
        result["releases_found_nothing_outcomes"] = dict(sim.found_nothing)
    else:
        result["releases_found_nothing_outcomes"]["unknown"] = rel.found_nothing
    result["releases_found_nothing_first"] = [
        {"attempt": op.attempt, "key": op.key, "time_s": round(op.invoke_time / 1e9, 3),
         "outcome": op.outcome or "unknown"} for op in rel.first]
    result.update({"overlap": ov.to_dict(), "releases_found_nothing": rel.found_nothing,
                   "releases_found_nothing_rate": rel.rate, "releases_unknown": rel.unknown,
                   "ops": digest.completed, "duration_s": (end - start) / 1e9,
                   "faults": digest.faults.summary(), "faults_not_fired": digest.faults.not_fired()})
    unsure += fault_doubts(result["faults"], result["faults_not_fired"])  # faults must prove they acted
    # Without the audit there are no claims: every overlap's cause is "unknown", and stale
    # effects are judged only where a sink recorded them.
    claims = sim.claims if sim is not None else None
    to_history = clock.to_history_ns if clock is not None else None
    windows = _windows(digest)
    paused = windows.holder_paused(to_history) if to_history and windows else None
    result["overlap"]["causes"] = overlap_causes(jobs, end, claims, digest.ttl_ms, paused)
    result["lost_while_held"] = lost_while_held(claims, jobs, to_history, digest.ttl_ms, paused)
    result["stale_effects"] = stale_effects(digest.effect_ops, sim.stale if sim is not None else {},
                                            digest.effects, claims, clock)
    _judge_early_loss(result, bad, jobs, digest, claims, clock)
    limit = config.get("max_overlap")
    if limit is not None and ov.rate > limit:
        bad.append(f"jobs overlapped {ov.rate:.1%} of the busy time ({ov.count} runs started while "
                   f"another run of the same key was in progress), above max_overlap {limit:.1%}")
    # A run cut short tested less than it was asked to: never VALID (a proven violation stands).
    result["interrupted"] = digest.span.interrupted(digest.config or config, end)
    if result["interrupted"]:
        unsure.append(cut_short(result["interrupted"]))
    result["diagnosis"] = diagnose(result)
    result["valid"] = False if bad else "unknown" if unsure else True
    result["reasons"] = bad + unsure if bad or unsure else _all_clear(result, limit)
    return result


def _judge_early_loss(result, bad, jobs, digest, claims, clock) -> None:
    """Claims the store lost before their deadline while another attempt ran the job: a failure
    with its own witness (checkers/early_loss.py)."""
    found = early_losses(jobs, digest.promises, claims, digest.ttl_ms)
    result["early_loss"] = found.to_dict()
    if not found.losses:
        return
    first = found.losses[0]
    causes = ", ".join(f"{c.replace('_', ' ')} {n}" for c, n in result["early_loss"]["by_cause"].items() if n)
    bad.append(f"{len(found.losses)} claim(s) lost before the lease's deadline while another attempt "
               f"then ran the same job ({causes}): the first is {first.holder}'s, whose job "
               f"{first.job_key} {first.newcomer} started at {first.newcomer_start / 1e9:.3f} s, "
               f"before {first.holder}'s deadline at {first.deadline / 1e9:.3f} s")
    md = early_loss_markdown(first, clock, result.get("faults") or [])
    if result["witness"] is None:
        result["witness"] = {"kind": "early_loss", "markdown": md}
    else:
        result["witness"]["markdown"] += "\n" + md
def _windows(digest: Digest) -> FaultWindows:
    """The faults of the run on the history's time axis (read to its end by now)."""
    return FaultWindows(digest.faults.summary(), digest.span.pids, digest.end or 0)


def _require_prefix(config: dict) -> str:
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


def _check_audit(engine: Engine, events, prefix, clock: StoreClock, result, bad, unsure,
                 all_witnesses: bool = False):
    """Join, replay and judge with the store's audit; returns the model's result."""
    audit = engine.audit
    trust = max([TRUST_CLIENT_MS] + [1.5 * s for s in _store_clock_steps_ms(events)])
    joined, sim, remaining = engine.replay(clock, prefix, trust)
    jobs = engine.digest.jobs.runs
    complete = audit.complete
    result["problems"] = audit.problems + result["problems"] + joined.problems + sim.problems
    result["disagreements"] = joined.disagreements + sim.disagreements
    result["claims"] = sim.counts()
    result["claims_seen"] = _claims_seen(sim.claims)
    result["expiry_edge"] = {"count": len(sim.edges), "examples": sim.edges[:5]}
    result["foreign_releases"] = len(sim.foreign)
    result["audit"] = {"present": True, "complete": complete, "lines": audit.lines,
                       "unattributed": joined.unattributed}
    result["walk_ins"] = walk_ins(sim, jobs, clock)
    windows = _windows(engine.digest)
    witness = build_witness(sim, jobs, clock, faults=windows)
    if witness is not None:
        result["witness"] = witness.to_dict() | {"markdown": witness.to_markdown()}
    if all_witnesses and len(sim.foreign) > 1:
        more = [build_witness(sim, jobs, clock, which=i, faults=windows) for i in range(1, len(sim.foreign))]
        result["witnesses"] = [w.to_dict() | {"markdown": w.to_markdown()} for w in more if w]
    if sim.foreign:
        fr = sim.foreign[0]
        bad.append(f"{len(sim.foreign)} foreign release(s): the first is attempt {fr.remover}'s "
                   f"{fr.command} (audit.log line {fr.line}, {clock.to_history_ns(fr.time) / 1e9:.3f} s), "
                   f"which {fr.how} the claim of attempt {fr.victim.owner} on {fr.victim.key}")
    reuse = token_reuse(sim.claims)
    result["token_reuse"] = reuse.to_dict()
    if reuse.tokens:
        bad.append(f"holder tokens are not fresh per attempt: {reuse.attempts} attempts shared "
                   f"{reuse.tokens} token value(s) (first at audit.log line {reuse.line}: "
                   f"{', '.join(reuse.example)}); a late release of one can delete another's claim")
    reuse_md = reuse_markdown(reuse, lambda store_s: clock.to_history_ns(store_s) / 1e9)
    if reuse_md:
        if result["witness"] is None:
            result["witness"] = {"kind": "token_reuse", "markdown": reuse_md}
        else:
            result["witness"]["markdown"] += "\n" + reuse_md
    by_index = {op.index: op for op in remaining}
    uncovered = [by_index[i] for i in joined.uncovered(remaining, complete)]
    if uncovered:
        info = sum(op.type == "info" for op in uncovered)
        never = sum(op.type is None for op in uncovered)
        example = f"e.g. {uncovered[0].attempt} {uncovered[0].f}"
        if complete:
            unsure.append(f"{len(uncovered)} lease call(s) that got a reply sent commands the complete "
                          f"audit does not have ({example}): a foreign release could be hidden there")
        else:
            unsure.append(f"the audit is incomplete (cut short or with gaps) and {len(uncovered)} lease "
                          f"call(s) ({info} with unknown outcome, {never} never completed; {example}) "
                          "are not fully in it: a foreign release could be hidden there")
    if sim.unmatched_wins:
        unsure.append(f"{sim.unmatched_wins} acquire(s) reported a win that the store's audit does not "
                      f"show as a claim (first: {sim.unmatched_first[0]}): there is no evidence these "
                      "claims existed, so nothing can be said about them")
    if not sim.claims:
        unsure.append("no claim was seen in the store: no lease call created a key in the audit, so "
                      "there is nothing to judge (does the lease write to this store, and does its "
                      "acquire ever win?)")
    if joined.mismatches:
        unsure.append(f"{joined.mismatches} audit line(s) name a different command than the history's "
                      "sent lists, so attribution to attempts cannot be trusted")
    if result["claims"]["unknown"]:
        unsure.append(f"{result['claims']['unknown']} claim(s) could not be followed to their end "
                      "(removed by an unattributed command, owner unknown, or live across a gap)")
    if sim.lost_keys:
        unsure.append(f"{sim.lost_keys} key(s) could not be followed after an eviction fault: a create "
                      "with an unknown outcome may have found the key evicted")
    return sim


def _claims_seen(claims) -> dict:
    """How many claims the audit showed, on how many keys, and a few of those keys."""
    keys: dict[str, None] = {}
    for c in claims:
        keys.setdefault(c.key, None)
    return {"count": len(claims), "keys": len(keys), "examples": list(keys)[:3]}


def _estimate_clock(events, audit: _Audit, problems: list[str]) -> StoreClock:
    """No store-clock samples: estimate the offset from the joined commands (a join-only pass
    over history and audit), or, with nothing joined, align the first audit line with the first
    event."""
    pre = Engine(events, audit)
    digest = pre.start()
    windows, first = pre.windows()
    clock = StoreClock.estimate(windows)
    if clock is not None:
        problems.append(f"no store-clock samples: store times converted with an offset estimated "
                        f"from {len(windows)} joined commands")
        return clock
    problems.append("no store-clock samples and nothing joined: store times converted by aligning "
                    "the first audit line with the first history event (rough)")
    return StoreClock.fixed(round((first or 0.0) * 1e9) - digest.start)


def _store_clock_steps_ms(events) -> list[float]:
    """The sizes (ms) of the steps the run made to the store's clock, looked up ahead of the
    check (the model's trust window depends on them from the first line on)."""
    starts = (events.scan(b"fault_start") if isinstance(events, HistoryStream)
              else [e for e in events if e.get("type") == "fault_start"])
    return [abs((e.get("requested") or {}).get("size") or 0) * 1000 for e in starts
            if e.get("type") == "fault_start" and e.get("fault") == "clock" and e.get("target") == "store"]


def _history_only(digest: Digest, result, bad, unsure) -> None:
    """No audit: foreign releases only where the history proves them; say what is certain."""
    proven = digest.proof.proven(digest.faults.starts)
    result["certainty"] = {"foreign_releases": "proven from the history" if proven else "unknown",
                           "overlap": "certain", "releases_found_nothing": "certain",
                           "claims": "unknown (needs the audit)"}
    if proven:
        result["foreign_releases"] = len(proven)
        first = proven[0]
        bad.append(f"{len(proven)} foreign release(s) proven from the history alone: the first is "
                   f"{first.attempt}'s release at {first.invoke_time / 1e9:.3f} s, which deleted something "
                   "more than the lease after its own claim was made, so not its own claim")
    else:
        unsure.append("there is no audit.log, and the history alone proves no foreign release "
                      "(a release close to its deadline cannot be told from one of its own claim)")


def _all_clear(result: dict, limit) -> list[str]:
    claims = sum(result["claims"].values())
    ov = result["overlap"]
    within = "no max_overlap set" if limit is None else f"within max_overlap {limit:.1%}"
    reasons = [f"no foreign release among {claims} claim(s) in a complete audit",
               f"jobs overlapped {ov['rate']:.1%} of the busy time ({ov['count']} overlapping "
               f"start(s)); {within}"]
    if result["releases_found_nothing"]:
        reasons.append(f"{result['releases_found_nothing']} release(s) found nothing: their claim "
                       f"was gone before the release: {'; '.join(result['diagnosis'])}")
    return reasons


def check_run(run_dir, all_witnesses: bool = False, strict: bool = False, progress=None) -> dict:
    """Read the run in `run_dir` and check it, streaming its history and audit. Never raises —
    errors become valid "unknown" — except, with `strict`, `HistoryError` for a missing or empty
    history (the caller's mistake). `progress(done, total)`, when given, is called now and then
    with the bytes read so far and the bytes to read (history and audit)."""
    try:
        history = HistoryStream(run_dir)
        audit = open_audit(run_dir)
        total = history.total_bytes + (audit.total_bytes if audit is not None else 0)

        def report():
            progress(min(total, history.bytes_read + (audit.bytes_read if audit is not None else 0)), total)
        tick = report if progress is not None else None
        config, more = load_config(run_dir, lambda: history.scan(b"run_start")[:1])
        samples, clock_problems = load_store_clock(run_dir)
        result = check(history, audit, config, clock_samples=samples, all_witnesses=all_witnesses,
                       progress=tick)
        result["problems"] = history.problems + more + clock_problems + result["problems"]
        if tick is not None:
            progress(total, total)
        return result
    except HistoryError as e:
        if strict:
            raise
        return failed(f"the checker could not check {run_dir}: HistoryError: {e}")
    except Exception as e:  # noqa: BLE001 - a crashing checker must yield "unknown", not a crash
        return failed(f"the checker could not check {run_dir}: {type(e).__name__}: {e}")


def failed(reason: str) -> dict:
    """A result for a run that could not be checked at all."""
    return {"schema_version": SCHEMA_VERSION, "valid": "unknown", "reasons": [reason],
            "foreign_releases": 0,
            "overlap": {"count": 0, "rate": 0.0, "max_concurrency": 0, "concurrency_time_s": {}, "per_key": {},
                        "causes": {}},
            "releases_found_nothing": 0, "releases_found_nothing_rate": 0.0, "releases_unknown": 0,
            "releases_found_nothing_outcomes": {k: 0 for k in FOUND_NOTHING},
            "releases_found_nothing_first": [],
            "claims": {fate: 0 for fate in FATES}, "ops": 0, "duration_s": 0.0,
            "audit": {"present": False, "complete": False, "lines": 0, "unattributed": 0},
            "disagreements": [], "problems": [], "witness": None, "token_reuse": None, "walk_ins": 0, "faults": [], "faults_not_fired": [], "stale_effects": None,
            "claims_seen": None, "early_loss": None, "certainty": {},
            "interrupted": None, "lost_while_held": None, "diagnosis": [],
            "expiry_edge": {"count": 0, "examples": []}}
