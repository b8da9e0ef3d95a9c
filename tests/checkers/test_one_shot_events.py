"""`check` never lists the events it is handed: a one-shot iterator (a generator) is read once,
as it comes, where the check makes one pass, and refused before anything is read where it would
need two (an audit or store nodes: the look-ahead at the clock faults, then the pass); an
iterable that starts afresh each time is read as a list is."""
import gc
import importlib.util
import sys
from pathlib import Path

import pytest

from leasecheck.checkers import check
from leasecheck.checkers.read.audit import open_audit
from leasecheck.checkers.read.history import HistoryStream
from leasecheck.checkers.read.rundir import load_config, load_store_clock

ROOT = Path(__file__).resolve().parents[2]
EVENTS = 30_000
KEPT = 2_000        # events a generator lets the check hold at once, at most: far below EVENTS


def _run(tmp_path) -> Path:
    spec = importlib.util.spec_from_file_location("checker_speed", ROOT / "bench" / "checker_speed.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    run = tmp_path / "run"
    mod.generate(run, EVENTS)
    return run


class Held(AssertionError):
    pass


def _watched(run: Path, seen: list):
    """The history as a generator that fails (`Held`) when the events it yielded are held: every
    1,000 events it looks at those it yielded more than `KEPT` ago and counts the ones something
    besides itself still refers to (a list of them would hold every one)."""
    back: list[dict] = []
    for n, e in enumerate(HistoryStream(run), 1):
        back.append(e)
        seen.append(n)
        yield e
        if n % 1000 == 0 and len(back) > KEPT:
            old, back = back[:-KEPT], back[-KEPT:]
            gc.collect()
            held = sum(sys.getrefcount(x) > 3 for x in old)   # `old`, `x` and getrefcount's argument
            if held > len(old) // 10:
                raise Held(f"{held} of {len(old)} events yielded over {KEPT} events ago are still held")


def test_a_generator_without_an_audit_is_read_once_as_it_comes_never_listed(tmp_path):
    run = _run(tmp_path)
    config, _ = load_config(run, [])
    seen: list = []
    r = check(_watched(run, seen), None, config)
    assert len(seen) == sum(1 for _ in open(run / "history.jsonl", "rb")) > EVENTS // 2
    assert r["ops"] > 5_000 and r["valid"] == "unknown"      # no audit: no verdict without evidence
    assert r == check(list(HistoryStream(run)), None, config)


def test_the_watching_generator_fails_a_check_that_lists_it(tmp_path):
    """The test above can fail: a caller's list of the generator is caught."""
    run = _run(tmp_path)
    with pytest.raises(Held):
        list(_watched(run, []))


def test_a_generator_with_an_audit_is_refused_before_anything_is_read(tmp_path):
    run = _run(tmp_path)
    config, _ = load_config(run, [])
    samples, _ = load_store_clock(run)
    seen: list = []
    with pytest.raises(TypeError, match="one-shot iterator .* HistoryStream"):
        check(_watched(run, seen), open_audit(run), config, clock_samples=samples)
    assert seen == []
    with pytest.raises(TypeError, match="store nodes"):
        check(iter([]), None, config, nodes={})


def test_an_iterable_that_starts_afresh_is_read_as_a_list_is(tmp_path):
    run = _run(tmp_path)
    config, _ = load_config(run, [])
    samples, _ = load_store_clock(run)

    class Again:
        passes = 0

        def __iter__(self):
            Again.passes += 1
            yield from HistoryStream(run)
    r = check(Again(), open_audit(run), config, clock_samples=samples)
    assert r["valid"] is True and Again.passes == 2       # the look-ahead, then the pass
    assert r == check(list(HistoryStream(run)), open_audit(run), config, clock_samples=samples)


def test_a_store_without_clock_samples_is_estimated_from_a_bounded_head_not_a_list(tmp_path, monkeypatch):
    """A node's model reads a one-shot iterator (`nodes.NodeFeed` hands it its events): without
    clock samples the offset is estimated from the head of the history, which alone is kept for
    the pass — the rest streams — and the model is the one a list of the same events gives."""
    import leasecheck.checkers.measures.measure as measure_mod
    run = _run(tmp_path)
    config, _ = load_config(run, [])
    monkeypatch.setattr(measure_mod, "ESTIMATE_EVENTS", KEPT // 2)
    monkeypatch.setattr(measure_mod, "ESTIMATE_COMMANDS", 200)
    seen: list = []
    m = measure_mod.measure(_watched(run, seen), open_audit(run), config, None, clock_steps_ms=[])
    whole = measure_mod.measure(list(HistoryStream(run)), open_audit(run), config, None, clock_steps_ms=[])
    assert len(seen) > EVENTS // 2 and m.clock.estimated and m.clock.by_store == whole.clock.by_store
    assert "estimated from 200 joined commands" in " ".join(m.problems)
    assert [(c.owner, c.fate) for c in m.model.claims] == [(c.owner, c.fate) for c in whole.model.claims]
    assert len(m.model.claims) > 50 and m.model.disagreements == whole.model.disagreements
    # held whole (the head as large as the history), the watching generator fails it
    monkeypatch.setattr(measure_mod, "ESTIMATE_EVENTS", 10 * EVENTS)
    monkeypatch.setattr(measure_mod, "ESTIMATE_COMMANDS", 10 * EVENTS)
    with pytest.raises(Held):
        measure_mod.measure(_watched(run, []), open_audit(run), config, None, clock_steps_ms=[])


def test_a_one_shot_iterator_without_the_clock_steps_is_refused_by_measure(tmp_path):
    from leasecheck.checkers.measures.measure import measure
    run = _run(tmp_path)
    config, _ = load_config(run, [])
    with pytest.raises(TypeError, match="clock_steps_ms"):
        measure(iter(HistoryStream(run)), open_audit(run), config, None)
