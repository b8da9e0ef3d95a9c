import json
import os
import threading
import time

from leasecheck.harness.record.history import HistoryWriter


def test_events_are_time_ordered_and_flushed_without_close(tmp_path):
    path = tmp_path / "w0.jsonl"
    h = HistoryWriter(path)

    def spam(name):
        for i in range(500):
            h.record(name, "invoke", f="acquire", attempt=f"{name}.{i}")

    threads = [threading.Thread(target=spam, args=(f"w0.s{i}",)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    time.sleep(0.2)  # the flusher runs every 50 ms: the lines are on disk before close()
    lines = path.read_text().splitlines()
    assert len(lines) == 2000
    times = [json.loads(line)["time"] for line in lines]
    assert times == sorted(times)
    h.close()


def test_history_clock_is_monotonic_not_wall_clock(tmp_path):
    h = HistoryWriter(tmp_path / "h.jsonl", t0_ns=time.monotonic_ns())
    t = h.record("harness", "run_start")
    h.close()
    assert 0 <= t < 1e9  # nanoseconds since t0, not a Unix timestamp
    event = json.loads((tmp_path / "h.jsonl").read_text())
    assert event == {"time": t, "process": "harness", "type": "run_start"}


def test_appends_are_whole_lines_across_processes(tmp_path):
    path = tmp_path / "shared.jsonl"
    pids = []
    for k in range(3):
        pid = os.fork()
        if pid == 0:
            h = HistoryWriter(path)
            for i in range(300):
                h.record(f"w{k}", "effect", attempt=f"w{k}.{i}", pad="x" * 200)
            h.close()
            os._exit(0)
        pids.append(pid)
    for pid in pids:
        os.waitpid(pid, 0)
    lines = path.read_text().splitlines()
    assert len(lines) == 900 and all(json.loads(line)["type"] == "effect" for line in lines)


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
