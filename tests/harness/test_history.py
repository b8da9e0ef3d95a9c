import errno
import json
import os
import signal
import threading
import time

import pytest

import leasecheck.harness.record.history as history_mod
from leasecheck.checkers.read.history import HistoryStream
from leasecheck.harness.record.history import HistoryWriter
from tests.native import function


def _lines_so_far(path):
    """A part's lines as a reader sees them while its writer is open: up to the first zero byte."""
    data = path.read_bytes()
    return data[:data.index(b"\0")] if b"\0" in data else data


def test_events_are_time_ordered_and_in_the_file_as_they_are_made(tmp_path):
    path = tmp_path / "w0.jsonl"
    h = HistoryWriter(path)
    assert h.mapped

    def spam(name):
        for i in range(500):
            h.record(name, "invoke", f="acquire", attempt=f"{name}.{i}")

    threads = [threading.Thread(target=spam, args=(f"w0.s{i}",)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    lines = _lines_so_far(path).splitlines()      # no wait, no close: each line is in the file
    assert len(lines) == 2000
    times = [json.loads(line)["time"] for line in lines]
    assert times == sorted(times)
    assert path.stat().st_size > len(b"\n".join(lines))    # the reservation ahead of them
    h.close()
    assert path.read_bytes() == b"".join(line + b"\n" for line in lines)   # cut to its lines


def test_lines_past_the_reservation_remap_the_file(tmp_path, monkeypatch):
    monkeypatch.setattr(history_mod, "RESERVE", 4096)
    path = tmp_path / "w0.jsonl"
    h = HistoryWriter(path)
    lines = h.calls("w0.s0")
    for i in range(2000):
        lines.invoke("acquire", f"w0.s0.{i}", f"job:{i % 7}")
        if i == 999:
            assert len(_lines_so_far(path).splitlines()) == 1000
    h.close()
    events = [json.loads(line) for line in path.read_bytes().splitlines()]
    assert [e["attempt"] for e in events] == [f"w0.s0.{i}" for i in range(2000)]


def test_a_killed_writer_loses_no_line_and_its_reservation_reads_as_the_end(tmp_path):
    parts = tmp_path / "history.d"
    parts.mkdir()
    pid = os.fork()
    if pid == 0:    # the child: a worker killed with SIGKILL, its writer never closed
        try:
            h = HistoryWriter(parts / "w0.jsonl")
            lines = h.calls("w0.s0")
            for i in range(300):
                lines.invoke("acquire", f"w0.s0.{i}", "job:1")
                lines.done("ok", "acquire", f"w0.s0.{i}", "job:1", True, [["w0.s0.c0", i, "SET", 1]])
        finally:
            os.kill(os.getpid(), signal.SIGKILL)
    os.waitpid(pid, 0)
    data = (parts / "w0.jsonl").read_bytes()
    assert data.endswith(b"\0")                           # the rest of its reservation
    stream = HistoryStream(tmp_path)
    events = list(stream)
    assert len(events) == 600 and events[-1]["attempt"] == "w0.s0.299"
    assert stream.problems == []                           # the zero bytes are no torn line


def test_a_file_that_cannot_be_reserved_is_written_every_50_ms(tmp_path, monkeypatch):
    def no_fallocate(fd, offset, length):
        raise OSError(errno.EOPNOTSUPP, "Operation not supported")
    monkeypatch.setattr(os, "posix_fallocate", no_fallocate)
    path = tmp_path / "w0.jsonl"
    h = HistoryWriter(path)
    assert not h.mapped
    for i in range(10):
        h.record("w0.s0", "invoke", f="acquire", attempt=f"w0.s0.{i}")
    time.sleep(0.3)    # the flusher writes every 50 ms: the lines are on disk before close()
    data = path.read_bytes()
    assert b"\0" not in data and len(data.splitlines()) == 10
    h.close()
    assert len(path.read_bytes().splitlines()) == 10


def test_history_clock_is_monotonic_not_wall_clock(tmp_path):
    h = HistoryWriter(tmp_path / "h.jsonl", t0_ns=time.monotonic_ns())
    t = h.record("harness", "run_start")
    h.close()
    assert 0 <= t < 1e9  # nanoseconds since t0, not a Unix timestamp
    event = json.loads((tmp_path / "h.jsonl").read_text())
    assert event == {"time": t, "process": "harness", "type": "run_start"}


def test_a_system_without_fallocate_gets_the_flusher(tmp_path, monkeypatch):
    monkeypatch.delattr(os, "posix_fallocate")
    h = HistoryWriter(tmp_path / "w0.jsonl")
    assert not h.mapped
    h.record("w0.s0", "invoke", f="acquire", attempt="w0.s0.0")
    h.close()
    assert len((tmp_path / "w0.jsonl").read_bytes().splitlines()) == 1


def test_processes_writing_their_own_parts_at_once_give_whole_lines(tmp_path):
    # one file per process (leasecheck.rundir.HISTORY_PARTS), read together as one history
    parts = tmp_path / "history.d"
    parts.mkdir()
    pids = []
    for k in range(3):
        pid = os.fork()
        if pid == 0:
            h = HistoryWriter(parts / f"w{k}.jsonl")
            for i in range(300):
                h.record(f"w{k}", "effect", attempt=f"w{k}.{i}", pad="x" * 200)
            h.close()
            os._exit(0)
        pids.append(pid)
    for pid in pids:
        os.waitpid(pid, 0)
    stream = HistoryStream(tmp_path)
    events = list(stream)
    assert len(events) == 900 and all(e["type"] == "effect" for e in events) and stream.problems == []
    assert all(b"\0" not in p.read_bytes() for p in parts.iterdir())


def test_lines_are_compact_json_in_field_order_with_the_standard_encoders_fallback(tmp_path):
    # The live counters match byte strings such as '"type":"ok","f":"acquire"', so the writer's
    # encoder must keep json.dumps's compact form and field order; what orjson refuses (an
    # integer beyond 64 bits, integer keys) is still written.
    path = tmp_path / "h.jsonl"
    h = HistoryWriter(path, t0_ns=0)
    fields = {"f": "acquire", "attempt": "w0.s0.7", "key": "job:1", "value": False,
              "sent": [["w0.s0.c0", 3, "SET"], ["w0.s0.c0", None, "CLIENT"]], "ratio": 0.25}
    t = h.record("w0.s0", "fail", **fields)
    h.record("harness", "note", big=2 ** 70, by_code={1: "x"}, text="clé")
    h.close()
    first, second = path.read_bytes().decode().splitlines()
    expected = {"time": t, "process": "w0.s0", "type": "fail", **fields}
    assert first == json.dumps(expected, separators=(",", ":"))
    assert json.loads(second)["big"] == 2 ** 70
    assert json.loads(second)["by_code"] == {"1": "x"} and json.loads(second)["text"] == "clé"


def _slot_events(process, key):
    attempt = f"{process}.7"
    sent = [["w0.s0.c0", 3, "SET", 1], ["w0.s0.c0", None, "CLIENT"]]
    call = {"attempt": attempt, "key": key}
    return [("invoke", {"f": "acquire", **call}),
            ("ok", {"f": "acquire", **call, "value": True, "sent": sent}),
            ("fail", {"f": "acquire", **call, "value": False, "sent": []}),
            ("ok", {"f": "renew", **call, "value": 1, "sent": sent}),                       # not a bool
            ("ok", {"f": "release", **call, "value": True, "sent": [["c", 2 ** 70, "DEL"]]}),  # beyond orjson
            ("job_start", call), ("effect", call),
            ("job_end", {**call, "aborted": False}), ("job_end", {**call, "aborted": True}),
            ("job_end", {**call, "aborted": None})]


def test_a_slots_call_lines_are_the_bytes_record_writes(tmp_path, monkeypatch):
    # CallLines formats a slot's events from parts encoded once: every line must be byte for byte
    # what record() writes for the same event at the same time (odd characters in names and keys
    # included), and what its templates cannot write goes through record() unchanged.
    import itertools

    from leasecheck.harness.record import history as history_module
    out = {}
    for side in ("record", "lines"):
        ticks = itertools.count()
        monkeypatch.setattr(history_module, "_clock", lambda: next(ticks) * 1000)
        h = HistoryWriter(tmp_path / f"{side}.jsonl", t0_ns=0)
        for process in ("w0.s1", 'w"1.s%d\\', "wé.s0"):
            lines = h.calls(process)
            for key in ("job:1", 'k"ey%s\\\n', "clé"):
                for kind, fields in _slot_events(process, key):
                    if side == "record":
                        h.record(process, kind, **fields)
                    elif kind == "invoke":
                        lines.invoke(fields["f"], fields["attempt"], key)
                    elif kind in ("ok", "fail"):
                        lines.done(kind, fields["f"], fields["attempt"], key, fields["value"], fields["sent"])
                    elif kind == "job_end":
                        lines.job_end(fields["attempt"], key, fields["aborted"])
                    else:
                        lines.job(kind, fields["attempt"], key)
        h.close()
        out[side] = (tmp_path / f"{side}.jsonl").read_bytes()
    assert out["lines"] == out["record"]
    written = out["record"].splitlines()
    assert len(written) == 3 * 3 * 10 and json.loads(written[4])["sent"] == [["c", 2 ** 70, "DEL"]]
    assert [json.loads(line)["time"] for line in written] == [i * 1000 for i in range(90)]


def test_a_job_of_no_duration_is_the_three_lines_record_writes(tmp_path, monkeypatch):
    # CallLines.instant_job (compiled: one call of the C sink's ``lines``) writes a job of no
    # duration's job_start, effect and job_end byte for byte as record() writes them, each line
    # stamped with its own clock read; a writer whose reservation is used up takes them one by one
    import itertools

    from leasecheck.harness.record import history as history_module
    out = {}
    for side in ("record", "instant", "instant-remapped"):
        ticks = itertools.count()
        monkeypatch.setattr(history_module, "_clock", lambda: next(ticks) * 1000)
        if side == "instant-remapped":
            monkeypatch.setattr(history_module, "RESERVE", 64)    # every few lines past the reservation
        h = HistoryWriter(tmp_path / f"{side}.jsonl", t0_ns=0)
        for process in ("w0.s1", 'w"1.s%d\\', "wé.s0"):
            lines = h.calls(process)
            for n, key in enumerate(("job:1", 'k"ey%s\\\n', "clé")):
                attempt = f"{process}.{n}"
                if side == "record":
                    for kind, fields in (("job_start", {}), ("effect", {}), ("job_end", {"aborted": False})):
                        h.record(process, kind, attempt=attempt, key=key, **fields)
                else:
                    lines.instant_job(attempt, key)
        h.close()
        out[side] = (tmp_path / f"{side}.jsonl").read_bytes()
    assert out["instant"] == out["record"]
    written = [json.loads(line) for line in out["record"].splitlines()]
    # (a line that did not fit has read the clock once more: the times differ, nothing else)
    remapped = [json.loads(line) for line in out["instant-remapped"].splitlines()]
    assert [{**e, "time": 0} for e in remapped] == [{**e, "time": 0} for e in written]
    assert all(a["time"] < b["time"] for a, b in zip(remapped, remapped[1:]))
    assert [e["type"] for e in written[:3]] == ["job_start", "effect", "job_end"]
    assert [e["time"] for e in written] == [i * 1000 for i in range(27)]


def test_the_c_line_writer_comes_with_the_compiled_history_writer():
    # compiled, the history writer stamps and formats a slot's lines with leasecheck._linewrite's
    # Sink (built with it, setup.py), whose lock is the writer's; run as Python, it formats them
    # with its templates under a threading.Lock
    from leasecheck.harness.record import history as history_module
    compiled = not history_module.__file__.endswith(".py")
    assert (history_module._linewrite_sink is not None) == compiled


def _sink_or_skip_check():
    from leasecheck.harness.record import history as history_module
    return function("_linewrite", "Sink", history_module._linewrite_sink)


def test_the_c_line_writer_writes_what_the_templates_format():
    from leasecheck.harness.record import history as history_module
    Sink = _sink_or_skip_check()
    if Sink is None:
        return
    odd = [b'"w0.s1"', b'"k\\"ey%s\\\\"', '"clé"'.encode(), b"", b"[]", b'[["c",1,"SET",1]]']
    kinds = [(history_module._INVOKE, history_module._INVOKE_SEGMENTS, 4),
             (history_module._DONE["ok"], history_module._DONE_SEGMENTS["ok"], 6),
             (history_module._JOB["effect"], history_module._JOB_SEGMENTS["effect"], 3),
             (history_module._JOB_END, history_module._JOB_END_SEGMENTS, 4)]
    for template, segments, count in kinds:
        for t in (0, 7, 10 ** 15, -3, 2 ** 63 - 1):
            values = [odd[(t + i) % len(odd)] for i in range(count)]
            expected = template % (t, *values)
            buf = bytearray(b"\0" * 600)
            sink = Sink(0, lambda t=t: t)            # a test's clock
            sink.pos = 1007
            sink.map(buf, 1000, 1600)                 # the buffer is the file from offset 1000
            assert sink.line(segments, *values) == t
            assert sink.pos == 1007 + len(expected)
            assert bytes(buf[7:7 + len(expected)]) == expected and buf[:7] == b"\0" * 7
            assert set(buf[7 + len(expected):]) == {0}
            # past the reservation's end: nothing written, None, pos where it was
            short = bytearray(600)
            sink.map(short, 1000, 1007 + len(expected) - 1)
            sink.pos = 1007
            assert sink.line(segments, *values) is None and sink.pos == 1007
            assert set(short) == {0}
            sink.map(None)                            # unmapped: nothing written either
            assert sink.line(segments, *values) is None and sink.pos == 1007
    segments = history_module._INVOKE_SEGMENTS
    sink = Sink(5, lambda: 12)
    sink.map(bytearray(400), 0, 400)
    assert sink.line(segments, b"a", b"b", b"c", b"d") == 7 == sink.t0 + 2      # clock() - t0
    sink.t0 = 2
    assert sink.line(segments, b"a", b"b", b"c", b"d") == 10
    with pytest.raises(TypeError):
        sink.line(segments, b"a", "not bytes", b"c", b"d")
    with pytest.raises(ValueError):
        sink.line(segments, b"a", b"b")                                 # a value short
    with pytest.raises(ValueError):
        sink.map(bytearray(100), 0, 200)                                # end past the buffer
    with pytest.raises(BufferError):
        sink.map(bytes(100), 0, 100)                                    # not writable
    assert not sink.locked()                                            # every error let go of the lock
    sink.pos = 150                                                      # before base (a bad pos): nothing
    sink.map(bytearray(100), 200, 300)
    assert sink.line(segments, b"a", b"b", b"c", b"d") is None


def test_the_c_sinks_lines_are_its_line_one_after_the_other():
    from leasecheck.harness.record import history as history_module
    Sink = _sink_or_skip_check()
    if Sink is None:
        return
    ticks, ticks2 = iter(range(10 ** 6, 10 ** 7, 7)), iter(range(10 ** 6, 10 ** 7, 7))
    one, many = Sink(0, lambda: next(ticks)), Sink(0, lambda: next(ticks2))
    values = (b'"w0.s1"', b'"w0.s1.4"', b'"job:7"')
    a, b = bytearray(800), bytearray(800)
    one.map(a, 0, 800)
    many.map(b, 0, 800)
    first = [one.line(segments, *values) for segments in history_module._INSTANT_JOB]
    assert many.lines(history_module._INSTANT_JOB, *values) == first[0] == 10 ** 6
    assert bytes(a) == bytes(b) and many.pos == one.pos > 0
    assert [json.loads(line)["time"] for line in bytes(b[:many.pos]).splitlines()] == first == [10 ** 6 + 7 * i
                                                                                              for i in range(3)]
    # when the three might not fit, nothing is written and the writer takes them one by one
    short = bytearray(800)
    many.map(short, 0, one.pos + 10)
    many.pos = 0
    assert many.lines(history_module._INSTANT_JOB, *values) is None and many.pos == 0 and set(short) == {0}
    many.map(None)
    assert many.lines(history_module._INSTANT_JOB, *values) is None
    many.map(bytearray(800), 0, 800)
    with pytest.raises(TypeError):
        many.lines(history_module._INSTANT_JOB, b"a", "not bytes", b"c")
    with pytest.raises(ValueError):
        many.lines(history_module._INSTANT_JOB, b"a", b"b")      # a value short
    with pytest.raises(TypeError):
        many.lines(())
    assert not many.locked() and many.pos == 0


def test_a_slots_line_waits_for_the_writers_lock_and_is_stamped_after(tmp_path):
    # a line stamped while another thread holds the writer's lock waits for it (compiled, in the C
    # sink, without the GIL, so the holder can go on) and is stamped after: each file stays in
    # time order
    h = HistoryWriter(tmp_path / "h.jsonl", t0_ns=0)
    assert (h._lock is h._sink) == (history_mod._linewrite_sink is not None)
    lines = h.calls("w0.s0")
    done = []
    with h._lock:
        held_at = h.now()
        worker = threading.Thread(target=lambda: done.append(lines.job("job_start", "w0.s0.0", "k")))
        worker.start()
        time.sleep(0.05)
        assert not done                                  # waiting for the lock
    worker.join(5)
    assert done and done[0] > held_at
    with pytest.raises(RuntimeError):
        h._lock.release()                                # not held
    h.close()
    assert json.loads((tmp_path / "h.jsonl").read_bytes())["time"] == done[0]


def test_the_c_sink_writes_a_calls_sent_list_as_orjson_does():
    # a slot's ``ok``/``fail`` hands its ``sent`` list to the C sink, which writes it as JSON; it must
    # be orjson's bytes, and what it does not write as orjson does it refuses (TypeError: the
    # history writer then hands the list to orjson, as before)
    import orjson
    Sink = _sink_or_skip_check()
    if Sink is None:
        return
    buf = bytearray(1 << 16)
    sink = Sink(0, lambda: 42)
    sink.map(buf, 0, len(buf))
    segments = (b"<", b"|", b">\n")
    every_byte = "".join(chr(c) for c in range(0x80))
    for value in ([["w0.s0.c0", 5, "SET", 1]], [], (), [["w0.s0.c1@node2", None, "EVALSHA"]],
                  [every_byte, "é\u2028\U0001f600", "", '"\\/'], [True, False, None, 0, -1, 10, -2 ** 63, 2 ** 63 - 1],
                  [(1, [2, (3, [])]), [[["deep"]]]], [["w\"0.s%d\\", 2 ** 31, "SET", 0]]):
        sink.pos = 0
        assert sink.line(segments, value) == 42
        assert bytes(buf[:sink.pos]) == b"<42|" + orjson.dumps(value) + b">\n", value
    for value in ([2 ** 63], [-2 ** 63 - 1], [1.5], ["\ud800"], [b"bytes"], [{"a": 1}], [True.__class__],
                  [[[[[[[[[[[[[[[[[[[["too deep"]]]]]]]]]]]]]]]]]]]]):
        sink.pos = 0
        with pytest.raises(TypeError):
            sink.line(segments, value)
        assert sink.pos == 0 and not sink.locked()
    with pytest.raises(TypeError):
        sink.line(segments, {"not": "a list"})


def test_the_c_lock_takes_gives_and_waits_as_a_threading_lock_does():
    # compiled, a slot's send tracker takes leasecheck._linewrite.Lock for every command and drain
    from leasecheck.harness.record import numbering
    compiled = not numbering.__file__.endswith(".py")
    lock = numbering.SendTracker("w0.s0")._lock
    assert (type(lock).__module__ == "leasecheck._linewrite") == (compiled and _sink_or_skip_check() is not None)
    if _sink_or_skip_check() is None:
        return
    from leasecheck._linewrite import Lock
    lock = Lock()
    assert not lock.locked()
    with lock:
        assert lock.locked()
        got = []
        other = threading.Thread(target=lambda: (lock.acquire(), got.append(time.monotonic()), lock.release()))
        other.start()
        time.sleep(0.05)
        assert not got                         # waiting, without the GIL
        let_go = time.monotonic()
    other.join(5)
    assert got and got[0] >= let_go and not lock.locked()
    with pytest.raises(RuntimeError):
        lock.release()
    with pytest.raises(TypeError):
        Lock(1)
    try:
        with lock:
            raise KeyError("inside")
    except KeyError:
        pass
    assert not lock.locked()                   # an exception inside lets go and goes on
