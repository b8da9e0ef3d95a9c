"""The live counts of a run, read from history files as they grow, and how they are shown: a plain
line per interval when the output is not a terminal (no escape codes), a redrawn block on one,
nothing with --quiet."""
import json
import threading
import time
from io import StringIO
from pathlib import Path

from rich.console import Console

from leasecheck.harness.record.history import HistoryWriter
from leasecheck.harness.run import live_stats
from leasecheck.harness.run.live_stats import ORDER_DELAY_NS, LiveStats
from leasecheck.harness.run.progress import Rate, RunProgress, log_interval_s, plain_line
from leasecheck.events import encode_event

MS = 1_000_000


def _line(t, process, type, **fields):
    return json.dumps({"time": t, "process": process, "type": type, **fields}, separators=(",", ":")) + "\n"


def _append(path: Path, text: str):
    with open(path, "a") as f:
        f.write(text)


def test_counts_calls_acquires_found_nothing_and_faults(tmp_path):
    w0, h = tmp_path / "w0.jsonl", tmp_path / "harness.jsonl"
    calls = [("acquire", "ok", {"value": True}), ("acquire", "fail", {"value": False}),
             ("acquire", "info", {"error": "TimeoutError"}), ("release", "ok", {"value": False}),
             ("release", "ok", {"value": True}), ("renew", "ok", {"value": True}),
             ("effect", "ok", {"value": True})]          # --sink's effect write is not a lease call
    _append(w0, "".join(_line(2 * i, "w0.s0", "invoke", f=f, attempt="a", key="k")
                        + _line(2 * i + 1, "w0.s0", kind, f=f, attempt="a", key="k", **rest, sent=[[3, "EVALSHA"]])
                        for i, (f, kind, rest) in enumerate(calls)))
    _append(h, _line(8, "nemesis", "fault_start", fault="pause", target="holder", n=0, requested={})
            + _line(9, "nemesis", "fault_start", fault="clock", target="store", n=1, requested={})
            + _line(10, "nemesis", "fault_end", fault="pause", target="holder", n=0, measured={}))
    stats = LiveStats(tmp_path)
    s = stats.sample(20)
    assert (s.calls, s.acquires_won, s.acquires_lost, s.acquires_unknown) == (6, 1, 1, 1)
    assert s.found_nothing == 1 and s.faults_active == ["clock:store"] and s.faults_done == 1
    # only what was appended since is read: a half-written line waits for its end
    half = (_line(29, "w0.s0", "invoke", f="release", attempt="e", key="k")
            + _line(30, "w0.s0", "ok", f="release", attempt="e", key="k", value=False, sent=[]))
    _append(w0, half[:-25])
    assert stats.sample(40).found_nothing == 1
    _append(w0, half[-25:])
    s = stats.sample(50)
    assert s.found_nothing == 2 and s.calls == 7
    stats.close()


def test_overlaps_put_job_events_of_all_files_in_time_order(tmp_path):
    # w0 runs k from 0 to 100 ms; w1 starts k at 50 ms (an overlap) and j at 60 ms (no overlap);
    # w2 starts k at 100 ms exactly as w0's run ends (an end before a start: no overlap).
    _append(tmp_path / "w1.jsonl", _line(50 * MS, "w1.s0", "job_start", attempt="x", key="k")
            + _line(60 * MS, "w1.s1", "job_start", attempt="y", key="j")
            + _line(150 * MS, "w1.s0", "job_end", attempt="x", key="k", aborted=False))
    _append(tmp_path / "w0.jsonl", _line(0, "w0.s0", "job_start", attempt="a", key="k")
            + _line(100 * MS, "w0.s0", "job_end", attempt="a", key="k", aborted=False))
    _append(tmp_path / "w2.jsonl", _line(100 * MS, "w2.s0", "job_start", attempt="z", key="k"))
    stats = LiveStats(tmp_path)
    # events younger than the ordering delay wait: another file may still hold earlier ones
    assert stats.sample(ORDER_DELAY_NS + 40 * MS).overlaps == 0
    s = stats.sample(ORDER_DELAY_NS + 200 * MS)
    assert s.overlaps == 2          # w1's k at 50 ms (w0 running), w2's k at 100 ms (w1 still running)
    stats.close()


def test_counts_a_real_history_writer_and_survives_the_directory_going(tmp_path):
    parts = tmp_path / "history.d"
    parts.mkdir()
    w = HistoryWriter(parts / "w0.jsonl", t0_ns=0)
    stats = LiveStats(parts)
    for _ in range(3):
        w.record("w0.s0", "ok", f="acquire", attempt="a", key="k", value=True, sent=[[1, "SET"]])
    w.close()
    assert stats.sample(1).acquires_won == 3
    for p in parts.iterdir():       # the run merges and removes history.d at its end
        p.unlink()
    parts.rmdir()
    assert stats.sample(2, final=True).acquires_won == 3
    stats.close()


def test_lines_made_after_a_sample_are_counted_by_the_next_one(tmp_path):
    """A writer's file holds its reservation's zero bytes after its lines, where the next lines
    go: a sample reads up to them, and the next sample reads from where it stopped."""
    parts = tmp_path / "history.d"
    parts.mkdir()
    w = HistoryWriter(parts / "w0.jsonl", t0_ns=0)
    assert w.mapped
    stats = LiveStats(parts)
    for _ in range(3000):       # more than a sample's first read (live_stats.FIRST_READ)
        w.record("w0.s0", "ok", f="acquire", attempt="a", key="k", value=True, sent=[[1, "SET"]])
    assert (parts / "w0.jsonl").read_bytes().index(b"\0") > 3 * live_stats.FIRST_READ
    assert stats.sample(1).acquires_won == 3000
    for _ in range(4):
        w.record("w0.s0", "ok", f="acquire", attempt="b", key="k", value=True, sent=[[1, "SET"]])
    assert stats.sample(2).acquires_won == 3004
    w.close()
    assert stats.sample(3, final=True).acquires_won == 3004
    stats.close()


def test_with_a_slot_board_the_calls_are_the_boards_and_jobs_and_faults_the_historys(tmp_path):
    from leasecheck.harness.run.slot_board import LOST, NOTHING, UNKNOWN, WON, SlotBoard
    parts, path = tmp_path / "history.d", tmp_path / "slots.bin"
    parts.mkdir()
    # the history says one thing about the calls, the board another: with a board, the board counts
    _append(parts / "w0.jsonl", _line(1, "w0.s0", "invoke", f="acquire", attempt="a", key="k")
            + _line(2, "w0.s0", "ok", f="acquire", attempt="a", key="k", value=True, sent=[])
            + _line(3 * MS, "w0.s0", "job_start", attempt="a", key="k"))
    _append(parts / "w1.jsonl", _line(5 * MS, "w1.s0", "job_start", attempt="b", key="k"))
    _append(parts / "harness.jsonl", _line(6 * MS, "nemesis", "fault_start", fault="pause", target="holder",
                                           n=0, requested={}))
    stats = LiveStats(parts, board=path)
    s = stats.sample(ORDER_DELAY_NS + 10 * MS)        # no board yet: the history's counts
    assert (s.calls, s.acquires_won, s.overlaps) == (1, 1, 1)
    board = SlotBoard(path, workers=2, slots=1, create=True)
    on_call, _ = board.writers(0)
    for outcome in (WON, LOST, LOST, UNKNOWN):
        on_call("w0.s0", "acquire")
        on_call("w0.s0", None, outcome)
    on_call("w0.s0", "release")
    on_call("w0.s0", None, NOTHING)
    # a fault line in a worker's file is no fault: only the harness's file has them
    _append(parts / "w0.jsonl", _line(7 * MS, "nemesis", "fault_start", fault="kill", target="holder", n=9,
                                      requested={}))
    s = stats.sample(ORDER_DELAY_NS + 20 * MS)
    assert (s.calls, s.acquires_won, s.acquires_lost, s.acquires_unknown, s.found_nothing) == (5, 1, 2, 1, 1)
    assert s.overlaps == 1 and s.faults_active == ["pause:holder"]
    on_call("w0.s0", "acquire")
    on_call("w0.s0", None, WON)
    board.close()
    path.unlink()                 # the runner removes the board when the workers have stopped
    s = stats.sample(ORDER_DELAY_NS + 30 * MS, final=True)
    assert (s.calls, s.acquires_won) == (6, 2)
    stats.close()


def test_rate_over_the_last_two_seconds():
    r = Rate()
    assert r.add(0.0, 0) == 0.0
    assert r.add(1.0, 100) == 100.0
    r.add(2.0, 300)
    assert r.add(4.0, 1300) == 500.0    # (1300 - 300) / 2: older samples left the window


def test_the_first_rate_counts_from_the_start_of_the_run():
    # Plain log lines sample only every quarter of the run: the first one has no sample before it.
    assert Rate().add(6.5, 3250) == 500.0


class _FakeRun:
    """What RunProgress reads of a runner: its history clock, run directory, limit and state."""

    def __init__(self, run_dir: Path, time_limit_s: float):
        self.run_dir, self.stopped_at = run_dir, None
        (run_dir / "history.d").mkdir(parents=True)
        self.history = HistoryWriter(run_dir / "history.d" / "w0.jsonl")
        self.cfg = type("Cfg", (), {"time_limit_s": time_limit_s})()


def _claims(run: _FakeRun, seconds: float):
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        run.history.record("w0.s0", "ok", f="acquire", attempt="a", key="k", value=True, sent=[])
        run.history.record("w0.s0", "ok", f="release", attempt="a", key="k", value=False, sent=[])
        time.sleep(0.01)
    run.history.close()


def test_not_a_terminal_plain_lines_without_escape_codes(tmp_path):
    out = StringIO()
    console = Console(file=out, width=4096)            # a file: not a terminal
    run = _FakeRun(tmp_path, time_limit_s=2)           # a line a second (log_interval_s)
    with RunProgress(console, run):
        _claims(run, 2.3)
    text = out.getvalue()
    lines = text.splitlines()
    assert "\x1b" not in text and "\r" not in text
    assert len(lines) >= 3                             # two periodic lines and the final one
    assert all(line.startswith("progress: ") and "s of 2 s" in line for line in lines)
    assert "the checker's verdict comes after the run" in lines[-1]
    won = [int(x) for x in __import__("re").findall(r"acquires won (\d+)", text)]
    assert won == sorted(won) and won[-1] > 50 and f"{won[-1]} release(s) found nothing" in lines[-1]


def test_quiet_prints_nothing(tmp_path):
    out = StringIO()
    run = _FakeRun(tmp_path, time_limit_s=1)
    with RunProgress(Console(file=out), run, quiet=True):
        _claims(run, 1.2)
    assert out.getvalue() == ""


def test_a_terminal_gets_a_redrawn_block(tmp_path):
    out = StringIO()
    console = Console(file=out, force_terminal=True, width=120)
    run = _FakeRun(tmp_path, time_limit_s=1)
    with RunProgress(console, run, title="naive-del x pause:holder"):
        t = threading.Thread(target=_claims, args=(run, 0.8))
        t.start()
        t.join()
    text = out.getvalue()
    assert "\x1b[" in text and "progress: " not in text          # a live block, not log lines
    assert text.count("naive-del x pause:holder") >= 2             # redrawn
    assert "lease calls" in text and "release(s) found nothing" in text


def test_plain_line_and_interval():
    from leasecheck.harness.run.live_stats import Snapshot
    s = Snapshot(elapsed_s=12.04, calls=900, acquires_won=61, acquires_lost=5702, found_nothing=3, overlaps=4,
                 faults_active=["pause:holder"], faults_done=1)
    assert plain_line(s, 30, 1520.4, False) == (
        "progress: 12.0 s of 30 s, 1520 calls/s, acquires won 61 lost 5702 unknown 0, faults: pause:holder "
        "(1 done), so far 3 release(s) found nothing, 4 job run(s) overlapped another on their key "
        "(the checker's verdict comes after the run)")
    assert (log_interval_s(4), log_interval_s(30), log_interval_s(3600)) == (1.0, 7.5, 10.0)


def test_live_counts_do_not_depend_on_the_order_of_a_lines_fields(tmp_path):
    """The same events with their fields in another order (a later writer's) count the same."""
    def events(t0):
        yield {"time": t0, "process": "w0.s0", "type": "invoke", "f": "acquire", "attempt": "a", "key": "k"}
        yield {"time": t0 + 1, "process": "w0.s0", "type": "ok", "f": "acquire", "attempt": "a", "key": "k",
               "value": True, "sent": []}
        yield {"time": t0 + 2, "process": "w0.s0", "type": "job_start", "attempt": "a", "key": "k"}
        yield {"time": t0 + 3, "process": "w0.s0", "type": "job_end", "attempt": "a", "key": "k"}
        yield {"time": t0 + 4, "process": "w0.s0", "type": "invoke", "f": "release", "attempt": "a", "key": "k"}
        yield {"time": t0 + 5, "process": "w0.s0", "type": "ok", "f": "release", "attempt": "a", "key": "k",
               "value": False, "sent": []}
        yield {"time": t0 + 6, "process": "w0.s1", "type": "fail", "f": "acquire", "attempt": "b", "key": "k",
               "value": False, "sent": []}

    counts = []
    for name, order in (("writer", lambda e: e), ("reversed", lambda e: dict(reversed(list(e.items()))))):
        parts = tmp_path / name
        parts.mkdir()
        (parts / "w0.jsonl").write_bytes(b"".join(encode_event(order(e)) + b"\n" for e in events(10)))
        stats = LiveStats(parts)
        s = stats.sample(10**9, final=True)
        stats.close()
        counts.append((s.calls, s.acquires_won, s.acquires_lost, s.found_nothing))
    assert counts[0] == counts[1] == (2, 1, 1, 1)


def test_job_lines_in_another_shape_are_the_same_jobs(tmp_path, monkeypatch):
    """Overlaps count the same whether a job line is read in place (the writer's shape) or parsed
    (fields in another order, an escaped character in a key), with the lines read a few bytes or a
    megabyte at a time: a run of one key in one shape overlaps a run of it in the other."""
    from leasecheck.harness.run import live_stats

    def jobs(key, t0, shape):
        start = {"time": t0, "process": "w0.s0", "type": "job_start", "attempt": f"a{t0}", "key": key}
        end = {"time": t0 + 10 * MS, "process": "w0.s0", "type": "job_end", "attempt": f"a{t0}", "key": key,
               "aborted": False}
        return b"".join(encode_event(shape(e)) + b"\n" for e in (start, end))

    same, other = (lambda e: e), (lambda e: dict(reversed(list(e.items()))))
    counts = []
    for chunk in (live_stats.CHUNK, 64):
        monkeypatch.setattr(live_stats, "CHUNK", chunk)
        parts = tmp_path / f"chunk{chunk}"
        parts.mkdir()
        for i, key in enumerate(("k", 'k"1', "clé", "k\\2")):
            # w0 in the writer's shape, w1 the same keys 5 ms later, fields reversed: four overlaps
            (parts / "w0.jsonl").open("ab").write(jobs(key, 100 * MS * i, same))
            (parts / "w1.jsonl").open("ab").write(jobs(key, 100 * MS * i + 5 * MS, other))
        (parts / "w2.jsonl").write_bytes(jobs("k", 900 * MS, same))     # alone on k: no overlap
        stats = LiveStats(parts)
        counts.append(stats.sample(10**10, final=True).overlaps)
        stats.close()
    assert counts == [4, 4]
