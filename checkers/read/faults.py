"""The faults a run injected, from the history: what was asked for, what was measured, and
whether the fault took effect.

Pairs each ``fault_start`` with its ``fault_end`` (by ``n``); a fault without an end (the run was
killed mid-fault) is listed with ``end_s`` null. ``fault_not_fired`` events (a step whose time
never came) are listed apart. `judge` decides, from ``requested`` and ``measured`` alone, whether
each fault took effect within the tolerance of its kind (`TOLERANCE` says it in words):

- ``true``: the measurement shows the fault acted as asked;
- ``false``: it was measured and missed the request (or failed to start) — "did not take effect";
- ``null``: there is no measurement to judge (no ``fault_end``, or a probe that got no answer).

A run is only as good as its faults: `doubts` turns every fault that did not take effect, could
not be judged, or never fired into a reason the verdict cannot be VALID.
"""
from __future__ import annotations

from leasecheck.events import FAULT_END, FAULT_NOT_FIRED, FAULT_START, MEASURED_TOOK_EFFECT, MEASURED_WHY, TYPE
from leasecheck.protocol import on_store

# Each tolerance in words (the README's Faults section says the same).
TOLERANCE = {
    "pause": "the target was seen stopped (state T, or the container paused) for at least the "
             "requested time less max(0.25 s, 10%)",
    "clock": "the probed clock moved by the offset written, within 0.05 s + 5% of the offset + "
             "half the probe's round trip",
    "latency": "the probe's round trip through the proxy is the requested latency within the jitter "
               "+ max(5 ms, 10%)",
    "partition": "a probe through the proxy got no answer during the partition",
    "kill": "a new store process (another INFO run_id) came back with no keys; kill:holder: the worker "
            "process died of SIGKILL (exit -9) and is gone",
    "hang": "the worker froze a slot that was inside its job, the slot still held that claim at the heal, "
            "and its process was still running",
    "evict": "the store evicted keys, and at least one of them was the run's own (not a filler)",
}


class FaultTracker:
    """Feed events in history order; `summary()` lists the faults, `not_fired()` the steps that
    never started. `starts` keeps the ``fault_start`` events themselves (few; other checkers look
    at them)."""

    def __init__(self) -> None:
        self.starts: list[dict] = []
        self._out: dict[int, dict] = {}
        self._not_fired: list[dict] = []

    def feed(self, e: dict) -> None:
        kind = e.get(TYPE)
        if kind == FAULT_START:
            self.starts.append(e)
            self._out[e.get("n", len(self._out))] = {
                "n": e.get("n"), "fault": e.get("fault"), "target": e.get("target"),
                "start_s": round(e["time"] / 1e9, 3), "end_s": None,
                "requested": e.get("requested", {}), "measured": None,
                # a fault aimed at a role (`primary`, `replica`) names the node it acted on
                **({"node": e["node"]} if e.get("node") else {})}
        elif kind == FAULT_END and e.get("n") in self._out:
            f = self._out[e["n"]]
            f["end_s"] = round(e["time"] / 1e9, 3)
            f["measured"] = e.get("measured", {})
        elif kind == FAULT_NOT_FIRED:
            self._not_fired.append({"n": e.get("n"), "fault": e.get("fault"), "target": e.get("target"),
                                    "at": e.get("at"), "why": e.get("why") or "no reason recorded"})

    def summary(self) -> list[dict]:
        out = self._out
        listed = [out[k] for k in sorted(out, key=lambda k: out[k]["start_s"])]
        for f in listed:
            f["took_effect"], f["why"] = judge(f)
        return listed

    def not_fired(self) -> list[dict]:
        return sorted(self._not_fired, key=lambda f: (f["at"] is None, f["at"] or 0))


def faults(events) -> list[dict]:
    t = FaultTracker()
    for e in events:
        t.feed(e)
    return t.summary()


def judge(f: dict) -> tuple[bool | None, str]:
    """(took_effect, why) for one summary entry, from its ``requested`` and ``measured``."""
    measured = f.get("measured")
    if measured is None:
        return None, "the run ended before the fault was healed (no fault_end): nothing was measured"
    if measured.get("error"):
        return False, f"it failed to start: {measured['error']}"
    judge_kind = _JUDGES.get(f.get("fault"))
    if judge_kind is None:
        # A fault may judge itself in what it measured (leasecheck.protocol.MEASURED_TOOK_EFFECT / _WHY).
        if MEASURED_TOOK_EFFECT in measured and measured[MEASURED_TOOK_EFFECT] in (True, False, None):
            return measured[MEASURED_TOOK_EFFECT], str(measured.get(MEASURED_WHY) or "as the fault measured itself")
        return None, f"no measurement is defined for a {f.get('fault')!r} fault"
    return judge_kind(f.get("requested") or {}, measured, f.get("target"))


def doubts(summary: list[dict], not_fired: list[dict]) -> list[str]:
    """One reason per fault that keeps the run from VALID: it did not take effect, its effect
    could not be measured, or it never fired."""
    out = []
    for f in summary:
        name = f"fault {f['n']} {f['fault']}:{f['target']}"
        if f.get("took_effect") is False:
            out.append(f"{name} did not take effect: {f['why']}")
        elif f.get("took_effect") is None:
            out.append(f"{name} cannot be shown to have taken effect: {f['why']}")
    for f in not_fired:
        at = f"{f['at']:.2f} s" if isinstance(f.get("at"), (int, float)) else "?"
        out.append(f"fault {f['n']} {f['fault']}:{f['target']} scheduled at {at} did not fire: {f['why']}")
    return out


# -- one judge per kind --------------------------------------------------------------------------
def _num(x) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def _pause(req: dict, m: dict, target) -> tuple[bool | None, str]:
    want, got = req.get("duration_s"), m.get("stopped_s")
    if not _num(want) or not _num(got):
        return None, "no stopped_s measured (a history from before pauses were watched)"
    if not m.get("processes"):
        return False, "there was no process to pause"
    tol = max(0.25, 0.1 * want)
    ok = got >= want - tol
    return ok, (f"requested {want:.3f} s stopped, measured {got:.3f} s stopped "
                f"({', '.join(m['processes'])}; at least {want - tol:.3f} s needed)")


def _clock_tolerance(offset: float, rtt) -> float:
    return 0.05 + 0.05 * abs(offset) + (rtt / 2 if _num(rtt) else 0.0)


def _clock(req: dict, m: dict, target) -> tuple[bool | None, str]:
    offsets = m.get("offsets_s") or {}
    if on_store(target):
        want = req.get("size") if _num(req.get("size")) else offsets.get("store")
        got = m.get("store_skew_s")
        if not _num(want):
            return None, "no offset recorded"
        if not _num(got):
            return None, f"requested {want:+.3f} s, but the store's TIME could not be probed"
        tol = _clock_tolerance(want, m.get("store_probe_rtt_s"))
        return abs(got - want) <= tol, (f"requested {want:+.3f} s, measured {got:+.3f} s on the "
                                        f"store's TIME (tolerance {tol:.3f} s)")
    skews, rtts = m.get("worker_skew_s"), m.get("worker_probe_rtt_s") or {}
    if not isinstance(skews, dict):
        return None, "no worker clock was probed (a history from before worker clocks were probed)"
    answered = {w: s for w, s in skews.items() if _num(s) and _num(offsets.get(w))}
    if not answered:
        return None, f"no worker answered the clock probe (asked {', '.join(sorted(skews)) or 'none'})"
    for w in sorted(answered):
        tol = _clock_tolerance(offsets[w], rtts.get(w))
        if abs(answered[w] - offsets[w]) > tol:
            return False, (f"{w} requested {offsets[w]:+.3f} s, measured {answered[w]:+.3f} s on its own "
                           f"clock (tolerance {tol:.3f} s)")
    worst = max(answered, key=lambda w: abs(answered[w] - offsets[w]))
    return True, (f"{len(answered)} of {len(skews)} worker clocks probed, each moved by its offset "
                  f"(furthest: {worst} requested {offsets[worst]:+.3f} s, measured {answered[worst]:+.3f} s)")


def _latency(req: dict, m: dict, target) -> tuple[bool | None, str]:
    want = req.get("size") if _num(req.get("size")) else m.get("latency_ms")
    jitter = m.get("jitter_ms") if _num(m.get("jitter_ms")) else req.get("jitter_ms") or 0
    got = m.get("probe_rtt_ms")
    if not _num(want):
        return None, "no latency recorded"
    if not _num(got):
        return None, f"requested {want:g} ms, but the probe through the proxy got no answer"
    tol = jitter + max(5.0, 0.1 * want)
    return abs(got - want) <= tol, (f"requested {want:g} ms, measured {got:g} ms round trip through the "
                                    f"proxy (tolerance {tol:g} ms)")


def _partition(req: dict, m: dict, target) -> tuple[bool | None, str]:
    answered = m.get("probe_answered_during")
    if answered is None:
        return None, "the probe through the proxy was not recorded"
    if answered:
        return False, "a probe through the proxy was answered during the partition"
    return True, "a probe through the proxy got no answer during the partition"


def _kill(req: dict, m: dict, target) -> tuple[bool | None, str]:
    if target == "holder":
        return _kill_holder(m)
    before, after, keys = m.get("run_id_before"), m.get("run_id_after"), m.get("keys_after_restart")
    if not before or not after or not _num(keys):
        return None, "the store's run_id or key count around the restart was not recorded"
    if before == after:
        return False, f"the same store process (run_id {before[:8]}) answered after the restart"
    if keys:
        return False, f"a new store process came back with {keys} key(s), not empty"
    return True, f"a new store process (run_id {before[:8]} -> {after[:8]}) came back with 0 keys"


def _kill_holder(m: dict) -> tuple[bool | None, str]:
    names = ", ".join(m.get("processes") or []) or "no worker"
    if not m.get("processes"):
        return False, "there was no worker to kill"
    if m.get("gone") is not True or m.get("exit_code") != -9:
        return False, f"{names} was not seen gone after SIGKILL (exit code {m.get('exit_code')})"
    holding = (f"holding {', '.join(m.get('slots') or [])}" if m.get("held") else "holding no claim (none was found within 2 s)")
    return True, f"{names} (pid {m.get('pid')}, {holding}) died of SIGKILL and is gone; replacement {m.get('replacement')}"


def _hang(req: dict, m: dict, target) -> tuple[bool | None, str]:
    if not m.get("slot"):
        return False, "no slot held a claim within 2 s: nothing was hung"
    if not m.get("in_job"):
        return False, f"{m['slot']} was not inside a job when the worker was told to freeze it"
    if not m.get("held_through"):
        return False, f"{m['slot']}'s job ended or its claim was let go before the heal"
    if not m.get("alive"):
        return False, f"{m['slot']}'s worker process was not running at the heal"
    return True, (f"{m['slot']}'s job was frozen for {m.get('held_s')} s while it held its claim, its process "
                  f"running ({m.get('calls_during')} lease call(s) made meanwhile)")


def _evict(req: dict, m: dict, target) -> tuple[bool | None, str]:
    total, run = m.get("evicted_keys"), m.get("evicted_run_keys")
    if not _num(total) or not _num(run):
        return None, "the evicted keys were not counted (a history from before evictions were watched)"
    if not total:
        return False, "the store evicted no key"
    if not run:
        return False, f"the store evicted {total} key(s), all of them the fault's own fillers: no key of the run was lost"
    examples = m.get("evicted_run_key_examples") or []
    return True, (f"the store evicted {total} key(s), {run} of them the run's"
                  + (f" (e.g. {examples[0]})" if examples else ""))


_JUDGES = {"pause": _pause, "clock": _clock, "latency": _latency, "partition": _partition,
           "kill": _kill, "evict": _evict, "hang": _hang}
