"""The checker streams: `check_run` reads the history and the audit record by record and must
give exactly the verdict of `check` on the same run loaded into memory; it reports progress."""
import importlib.util
import shutil
from pathlib import Path

import pytest

import leasecheck.checkers.read.digest as digest
from leasecheck.checkers import check, check_run, load_audit, load_history
from leasecheck.checkers.read.rundir import load_config, load_store_clock

DATA = Path(__file__).parent / "data"
ROOT = Path(__file__).resolve().parents[2]


def in_memory(run_dir: Path) -> dict:
    events, problems = load_history(run_dir)
    config, more = load_config(run_dir, events)
    samples, clock_problems = load_store_clock(run_dir)
    result = check(events, load_audit(run_dir), config, clock_samples=samples)
    result["problems"] = problems + more + clock_problems + result["problems"]
    return result


@pytest.mark.parametrize("name", sorted(p.name for p in DATA.iterdir()))
@pytest.mark.parametrize("samples", [True, False], ids=["clock-samples", "estimated-clock"])
def test_streaming_check_equals_the_in_memory_check(name, samples, tmp_path):
    run = tmp_path / name
    shutil.copytree(DATA / name, run)
    if not samples:   # the clock is then estimated in a first, join-only pass over the audit
        (run / "store-clock.jsonl").unlink(missing_ok=True)
    streamed, loaded = check_run(run), in_memory(run)
    assert "could not check" not in " ".join(streamed["reasons"])
    assert streamed == loaded


def _generate():
    spec = importlib.util.spec_from_file_location("checker_speed", ROOT / "bench" / "checker_speed.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.generate


def test_progress_is_reported_in_bytes_read_up_to_the_total(tmp_path, monkeypatch):
    run = tmp_path / "run"
    _generate()(run, 20_000)
    monkeypatch.setattr(digest, "PROGRESS_EVERY", 1000)
    seen = []
    result = check_run(run, progress=lambda done, total: seen.append((done, total)))
    assert result["valid"] is True and result["audit"]["complete"]
    total = (run / "history.jsonl").stat().st_size + (run / "audit.log").stat().st_size
    assert len(seen) >= 20 and {t for _, t in seen} == {total}
    done = [d for d, _ in seen]
    assert done == sorted(done) and done[-1] == total and done[0] < total / 2


def _replay_watching_held_calls(engine, clock, prefix):
    """Run `engine` over its audit, noting before each audit line how many calls it holds
    (added from the history, not yet settled); returns (those counts, what `replay` returns)."""
    engine.start()
    held, feed = [], engine.joiner._feed

    def watched(rec):
        held.append(len(engine.joiner.unmatched) + len(engine.joiner.matched))
        return feed(rec)
    engine.joiner.watch = watched
    return held, engine.replay(clock, prefix)


def test_the_checker_holds_only_the_calls_in_flight(tmp_path):
    """Read side by side, the history runs ahead of the audit by about one call per slot: the
    calls waiting for their audit lines stay few however long the run (16 slots here)."""
    from leasecheck.checkers.read.audit import open_audit
    from leasecheck.checkers.model.clock import StoreClock
    from leasecheck.checkers.model.engine import Engine
    from leasecheck.checkers.read.history import HistoryStream
    from leasecheck.checkers.read.rundir import load_store_clock

    run = tmp_path / "run"
    _generate()(run, 30_000)
    engine = Engine(HistoryStream(run), open_audit(run))
    held, (joined, sim, remaining) = _replay_watching_held_calls(
        engine, StoreClock.from_samples(load_store_clock(run)[0]), "leasecheck:bench:")
    assert len(held) > 10_000 and max(held) <= 2 * 16
    assert remaining == [] and joined.missing == {} and sim.disagreements == []
    assert not any(engine.joiner.wanted.values())


def test_a_stray_command_mid_run_is_an_orphan_without_reading_ahead():
    """A numbered command no call lists is decided as soon as a later command of the same
    connection is listed — the checker does not read the rest of the history to decide it."""
    from leasecheck.checkers.read.audit import parse_audit
    from leasecheck.checkers.model.clock import StoreClock
    from leasecheck.checkers.model.engine import Engine
    from leasecheck.checkers.verdict import _Audit
    from test_claims_model import CLOCK, CONFIG, K, Run

    run = Run()
    t = 10
    for n in range(200):
        attempt = f"w0.s0.{n}"
        run.call(t, attempt, "acquire", "ok", True, ("SET", K, f"t{n}", "NX", "PX", "100"))
        if n == 3:
            run.cmd(t + 5, attempt, "GET", K)          # sent outside any call: in no sent list
        run.call(t + 10, attempt, "release", "ok", True, ("DEL", K))
        t += 20
    run.events.sort(key=lambda e: e["time"])
    text = "OK\n" + "".join(line + "\n" for line in run.lines) + "# end\n"
    result = check(run.events, parse_audit(text), CONFIG, clock_samples=CLOCK)
    assert any("GET from w0.s0.c0 seq 7 is in no sent list" in d for d in result["disagreements"])
    assert result["claims"]["released_by_holder"] == 200

    engine = Engine(run.events, _Audit.of(parse_audit(text)))
    held, _ = _replay_watching_held_calls(engine, StoreClock.from_samples(CLOCK), CONFIG["key_prefix"])
    assert max(held) <= 3


def test_a_late_command_written_before_the_completion_listing_an_earlier_number_is_attributed():
    # CI, pottery on five masters with the holder paused: the next acquire's thread sent SET (seq
    # 225) on a master's connection, then the previous release's own thread sent its late EVALSHA
    # there (226), written at once as late_sent, before the acquire's completion listed 225. The
    # streaming join took the late 226 for a horizon and read the SET before its call was in
    # ("is in no sent list"). A late_sent's numbers set no horizon (docs/history.md).
    run = DATA / "late-command-before-earlier-ok"
    r = check_run(run)
    assert r["disagreements"] == [] and r["problems"] == [] and r["audit"]["unattributed"] == 0
    assert r["valid"] is True and r == in_memory(run)
