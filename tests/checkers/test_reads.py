"""How often a check reads its input: every history line is parsed once and the audit is read once,
whatever properties run. A line is parsed as a typed record (`checkers/read/records.py`) or, when
it is none of those, as a dict: one of the two succeeds once per line, and no line is tried as a
record twice (where the checker runs compiled, the C reader tries each first, and the decoder only
the few it leaves). The history is opened once: a raw look-ahead at its ``fault_start``
lines (the store clock's steps size the model's trust window from the first audit line on), which
parses only the lines that hold that word, reads the same open file before the pass does.
(`tests/harness/test_reads_once.py`: the same for a whole `check_and_save`, report included.)"""
from pathlib import Path

import leasecheck.checkers.read.audit as audit_mod
import leasecheck.checkers.read.history as history_mod
from leasecheck.checkers import check_run
from tests.checkers.test_streaming import _generate


def _count(monkeypatch):
    """Opens per file name; `parsed[0]`: lines parsed (a record or a dict), `parsed[1]`: lines
    tried as a record by the decoder, `parsed[2]` by the C reader (where it is used, each line
    first: the decoder then tries only the lines it left)."""
    opened, parsed = {}, [0, 0, 0]
    real_open, real_loads, real_record = open, history_mod._loads, history_mod._decode_record
    real_native = history_mod._NATIVE

    def counted_open(path, *args, **kw):
        name = Path(path).name
        opened[name] = opened.get(name, 0) + 1
        return real_open(path, *args, **kw)

    def counted_loads(line):
        parsed[0] += 1
        return real_loads(line)

    def counted_record(line):
        parsed[1] += 1
        record = real_record(line)
        parsed[0] += 1
        return record

    def counted_native(line):
        parsed[2] += 1
        record = real_native(line)
        parsed[0] += record is not None
        return record
    for mod in (history_mod, audit_mod):
        monkeypatch.setattr(mod, "open", counted_open, raising=False)
    monkeypatch.setattr(history_mod, "_loads", counted_loads)
    monkeypatch.setattr(history_mod, "_decode_record", counted_record)
    if real_native is not None:
        monkeypatch.setattr(history_mod, "_NATIVE", counted_native)
    return opened, parsed


def _tried_once(parsed: list[int], lines: int) -> bool:
    """Each line tried as a record once: by the decoder, or by the C reader where it is used and
    by the decoder only when C left it (the run's start: a few lines)."""
    if history_mod._NATIVE is None:
        return parsed[1:] == [lines, 0]
    return parsed[2] == lines and parsed[1] <= 3


def test_every_history_line_is_parsed_once_and_the_audit_read_once(tmp_path, monkeypatch):
    run = tmp_path / "run"
    _generate()(run, 20_000)
    lines = sum(1 for _ in open(run / "history.jsonl", "rb"))
    opened, parsed = _count(monkeypatch)
    parts = []
    result = check_run(run, parts=parts)
    assert len(parts) > 10                 # every property judged, from the one measured run
    assert result["valid"] is True and result["ops"] > 5_000, result["reasons"]
    assert parsed[0] == lines and _tried_once(parsed, lines)
    assert opened.get("audit.log") == 1
    assert opened.get("history.jsonl") == 1          # the raw look-ahead, then the stream, on one open file


def test_a_run_with_faults_still_parses_its_history_once(tmp_path, monkeypatch):
    run = tmp_path / "run"
    _generate()(run, 5_000)
    hist = run / "history.jsonl"
    text = hist.read_text().splitlines(keepends=True)
    # A clock step on the store in the middle of the run: the look-ahead finds it, the stream
    # parses its line once more, like every other line.
    t = int(text[len(text) // 2].split('"time":')[1].split(",")[0])
    step = ('{"time":%d,"process":"harness","type":"fault_start","index":0,"fault":"clock",'
            '"target":"store","requested":{"size":0.2}}\n' % t)
    hist.write_text("".join(text[:len(text) // 2] + [step] + text[len(text) // 2:]))
    opened, parsed = _count(monkeypatch)
    result = check_run(run)
    assert "could not check" not in " ".join(result["reasons"])
    assert parsed[0] == len(text) + 1 and _tried_once(parsed, len(text) + 1)
    assert opened.get("audit.log") == 1 and opened.get("history.jsonl") == 1
