"""Loading the history: merged file, k-way merge of history.d/, damage reported, never written."""
import json

import pytest

from leasecheck.checkers import HistoryError, load_history, write_merged


def write(path, *events, tail=""):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(e) + "\n" for e in events) + tail)


def ev(t, process, type_="worker_start"):
    return {"time": t, "process": process, "type": type_}


def test_merges_parts_by_time_then_file_order(tmp_path):
    d = tmp_path / "history.d"
    write(d / "harness.jsonl", ev(0, "harness", "run_start"), ev(50, "harness", "run_end"))
    write(d / "w10.jsonl", ev(10, "w10"), ev(30, "w10"))
    write(d / "w2.jsonl", ev(10, "w2"), ev(20, "w2"))
    events, problems = load_history(tmp_path)
    assert problems == []
    assert [(e["time"], e["process"]) for e in events] == [
        (0, "harness"), (10, "w2"), (10, "w10"), (20, "w2"), (30, "w10"), (50, "harness")]
    assert [e["index"] for e in events] == list(range(6))
    assert not (tmp_path / "history.jsonl").exists()     # loading writes nothing


def test_prefers_merged_history(tmp_path):
    write(tmp_path / "history.jsonl", ev(0, "harness", "run_start"))
    write(tmp_path / "history.d" / "w0.jsonl", ev(5, "w0"))
    events, _ = load_history(tmp_path)
    assert [e["process"] for e in events] == ["harness"]


def test_torn_last_line_and_malformed_line(tmp_path):
    d = tmp_path / "history.d"
    write(d / "w0.jsonl", ev(1, "w0"), tail='{"time": 2, oops\n' + json.dumps(ev(3, "w0")) + "\n")
    write(d / "w3.jsonl", ev(1, "w3"), tail='{"time": 9, "process": "w3", "ty')
    events, problems = load_history(tmp_path)
    assert [e["time"] for e in events] == [1, 1, 3]
    assert problems[0].startswith("history.d/w0.jsonl:2: malformed line skipped")
    assert problems[1] == "history.d/w3.jsonl:2: torn last line (run was killed?)"


def test_event_without_integer_time_is_malformed(tmp_path):
    write(tmp_path / "history.jsonl", {"time": "soon", "type": "x"}, ev(1, "w0"))
    events, problems = load_history(tmp_path)
    assert len(events) == 1 and "history.jsonl:1: malformed line skipped" in problems[0]


def test_missing_and_empty_history(tmp_path):
    with pytest.raises(HistoryError, match="no history"):
        load_history(tmp_path)
    (tmp_path / "history.d").mkdir()
    (tmp_path / "history.d" / "w0.jsonl").write_text("")
    with pytest.raises(HistoryError, match="hold no events"):
        load_history(tmp_path)


def test_write_merged(tmp_path):
    d = tmp_path / "history.d"
    write(d / "harness.jsonl", ev(0, "harness", "run_start"))
    write(d / "w0.jsonl", ev(5, "w0"), tail='{"torn')
    problems = write_merged(tmp_path)
    assert problems == ["history.d/w0.jsonl:2: torn last line (run was killed?)"]
    lines = [json.loads(s) for s in (tmp_path / "history.jsonl").read_text().splitlines()]
    assert [(e["index"], e["time"]) for e in lines] == [(0, 0), (1, 5)]
    assert load_history(tmp_path)[0] == lines
    assert (tmp_path / "history.d").is_dir()      # kept unless asked


def test_write_merged_dropping_the_parts_keeps_the_history_once(tmp_path):
    d = tmp_path / "history.d"
    write(d / "harness.jsonl", ev(0, "harness", "run_start"), ev(9, "harness", "run_end"))
    write(d / "w0.jsonl", ev(5, "w0"))
    before = load_history(tmp_path)[0]
    write_merged(tmp_path, drop_parts=True)
    assert not d.exists() and sorted(p.name for p in tmp_path.iterdir()) == ["history.jsonl"]
    assert load_history(tmp_path)[0] == before


def test_a_failed_merge_drops_nothing(tmp_path):
    (tmp_path / "history.d").mkdir()
    (tmp_path / "history.d" / "w0.jsonl").write_text("")
    with pytest.raises(HistoryError):
        write_merged(tmp_path, drop_parts=True)
    assert (tmp_path / "history.d" / "w0.jsonl").exists() and not (tmp_path / "history.jsonl").exists()


@pytest.mark.parametrize("tail, problem", [
    ('{"time": 2, oops\n\n  \n', "history.jsonl:2: torn last line (run was killed?)"),
    ('{"time": 2, oops\n\n' + json.dumps(ev(3, "w0")) + "\n", "history.jsonl:2: malformed line skipped"),
    (json.dumps(ev(3, "w0")), "history.jsonl:2: last line has no newline (kept: it is complete JSON)"),
    (json.dumps(ev(0, "w0")) + "\n", "history.jsonl:2: time goes backwards (0 < 1)"),
])
def test_damage_is_told_apart_by_what_follows(tmp_path, tail, problem):
    """A line that does not parse is torn only when no other line follows it (blank lines aside)."""
    write(tmp_path / "history.jsonl", ev(1, "w0"), tail=tail)
    events, problems = load_history(tmp_path)
    assert len(problems) == 1 and problems[0].startswith(problem)
    assert [e["index"] for e in events] == list(range(len(events)))


def test_write_merged_copies_each_compact_line_and_rewrites_only_the_others(tmp_path):
    """A part's line is copied as written with its index spliced in (UTF-8 stays UTF-8); a line
    with an index already, or one not ending in its closing brace, is parsed and written anew.
    Whichever way, the merged history holds the parts' events, in order, each with its index."""
    d = tmp_path / "history.d"
    d.mkdir()
    (d / "harness.jsonl").write_bytes(
        b'{"time":0,"process":"harness","type":"run_start","note":"caf\xc3\xa9"}\n'
        b'{"time":7,"process":"harness","type":"run_end","index":41}\n')
    (d / "w0.jsonl").write_bytes(
        b'{"time": 3, "process": "w0", "type": "worker_start"}\n'          # spaces: still spliced
        b'{"time":5,"process":"w0","type":"worker_start","x":[1,{"y":"}"}]}   \n')   # trailing blanks
    problems = write_merged(tmp_path)
    assert problems == []
    lines = (tmp_path / "history.jsonl").read_bytes().splitlines()
    assert lines[0] == b'{"time":0,"process":"harness","type":"run_start","note":"caf\xc3\xa9","index":0}'
    assert lines[1] == b'{"time": 3, "process": "w0", "type": "worker_start","index":1}'
    events = [json.loads(s) for s in lines]
    assert [(e["time"], e["index"]) for e in events] == [(0, 0), (3, 1), (5, 2), (7, 41)]
    assert events[2]["x"] == [1, {"y": "}"}] and events[0]["note"] == "café"
    assert load_history(tmp_path)[0] == events


def test_the_look_ahead_finds_every_line_with_its_token_across_chunks(tmp_path):
    """`scan` reads a megabyte at a time and searches each with the C library's memmem where
    there is one: every line holding the token is found, wherever the chunks end."""
    import random

    rng = random.Random(7)
    lines, want = [], []
    for i in range(60_000):                      # about 4 MB: several chunks
        if rng.random() < 0.001:
            e = {"time": i, "process": "harness", "type": "fault_start", "fault": "clock", "n": len(want)}
            want.append(e)
        else:
            e = {"time": i, "process": "w0.s0", "type": "invoke", "f": "acquire", "attempt": f"w0.s0.{i}",
                 "key": "k" * rng.randrange(1, 40)}
        lines.append(json.dumps(e, separators=(",", ":")))
    (tmp_path / "history.jsonl").write_text("\n".join(lines) + "\n")
    from leasecheck.checkers.read.history import HistoryStream

    found = HistoryStream(tmp_path).scan(b"fault_start")
    assert [e["n"] for e in found] == list(range(len(want))) and len(want) > 20


def test_the_chunk_search_agrees_with_bytes_find():
    import random

    from leasecheck.checkers.read import history

    rng = random.Random(3)
    for _ in range(200):
        size = rng.choice([10, 5000, 70_000])
        buf = bytearray(rng.choice(b"abc_fault") for _ in range(size))
        token = b"fault_start"
        for _ in range(rng.randrange(3)):
            at = rng.randrange(size)
            buf[at:at + len(token)] = token
        start, end = sorted(rng.randrange(len(buf) + 1) for _ in range(2))
        assert history._find(buf, token, start, end) == buf.find(token, start, end)
        buf.extend(b"x")         # no buffer left exported: the array can still grow
