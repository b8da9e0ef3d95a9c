"""audit.log parsing: line format, C-style unquoting, OK / # end / # gap / torn lines."""
from hypothesis import given, strategies as st

import pytest

from leasecheck.checkers.read.audit import _stamp_time, load_audit, parse_audit, parse_line, unquote_args


def monitor_quote(arg: bytes) -> str:
    """Quote like Redis's sdscatrepr (what MONITOR prints)."""
    named = {b'"': '\\"', b"\\": "\\\\", b"\n": "\\n", b"\r": "\\r", b"\t": "\\t", b"\a": "\\a", b"\b": "\\b"}
    out = []
    for byte in arg:
        ch = bytes([byte])
        out.append(named.get(ch) or (chr(byte) if 32 <= byte < 127 else f"\\x{byte:02x}"))
    return '"' + "".join(out) + '"'


def test_command_line():
    rec = parse_line('1795951565.822380 [0 127.0.0.1:60120] "SET" "lc:r1:job:0" "tok" "NX" "PX" "1000"', 7)
    assert rec.line == 7 and rec.db == 0 and rec.addr == "127.0.0.1:60120"
    assert rec.time == pytest.approx(1795951565.822380, abs=1e-7)
    assert rec.argv == ["SET", "lc:r1:job:0", "tok", "NX", "PX", "1000"] and rec.name == "SET"


def test_script_line_and_ipv6_address():
    assert parse_line('1.5 [0 lua] "del" "k"').addr == "lua"
    assert parse_line('1.5 [3 [::1]:6379] "get" "k"').addr == "[::1]:6379"
    assert parse_line('1.5 [3 [::1]:6379] "get" "k"').name == "GET"


def test_escapes():
    args = unquote_args(r'"a\"b" "c\\d" "\n\r\t\a\b" "\x00\xff" "\xc3\xa9" ""')
    assert args[:3] == ['a"b', "c\\d", "\n\r\t\a\b"]
    assert args[3].encode("utf-8", "surrogateescape") == b"\x00\xff"   # not UTF-8, kept exactly
    assert args[4] == "é" and args[5] == ""


@pytest.mark.parametrize("bad", ['"unterminated', '"a""b"', 'bare', r'"\q"', ''])
def test_bad_quoting_is_rejected(bad):
    with pytest.raises(ValueError):
        unquote_args(bad)


@given(st.lists(st.binary(max_size=20), min_size=1, max_size=6))
def test_unquote_inverts_monitor_quoting(args):
    text = " ".join(monitor_quote(a) for a in args)
    assert [a.encode("utf-8", "surrogateescape") for a in unquote_args(text)] == args


def test_complete_audit():
    records, complete, problems = parse_audit('OK\n1.0 [0 127.0.0.1:1] "PING"\n# end\n')
    assert complete and problems == [] and [r.name for r in records] == ["PING"]


def test_gap_makes_it_incomplete_and_is_kept_in_order():
    records, complete, problems = parse_audit(
        'OK\n1.0 [0 a:1] "PING"\n# gap reader reconnected\n2.0 [0 a:1] "PING"\n# end\n')
    assert not complete
    assert [r.kind for r in records] == ["cmd", "gap", "cmd"] and records[1].note == "reader reconnected"
    assert any(p.startswith("audit.log:3: gap") for p in problems)


def test_torn_last_line_and_missing_end():
    records, complete, problems = parse_audit('OK\n1.0 [0 a:1] "PING"\n1.1 [0 a:1] "SET" "k" "v"')
    assert not complete and len(records) == 1     # a line without its newline is dropped, even if it parses
    assert "audit.log:3: torn last line (run was killed?)" in problems
    assert any("no '# end'" in p for p in problems)


def test_unreadable_line_is_reported_with_its_number():
    records, complete, problems = parse_audit('OK\n1.0 [0 a:1] "PING"\ngarbage\n2.0 [0 a:1] "PING"\n# end\n')
    assert complete and len(records) == 2
    assert problems and problems[0].startswith("audit.log:3: unreadable line skipped")


def test_missing_audit_is_none(tmp_path):
    assert load_audit(tmp_path) is None


@given(st.lists(st.binary(max_size=12), min_size=1, max_size=5),
       st.sampled_from(["1795951565.822380", "7.0", "12.5x", "1.2.3", "9007199254740993.0", "0.1",
                        "1.2345678901234567890123", "12345678901234567890.5", ".5", "5."]),
       st.sampled_from(["[0 127.0.0.1:6000]", "[12 lua]", "[0 a]", "[0 ]", "[x a:1]"]),
       st.sampled_from(["\n", "\r\n", "\r\r\n"]), st.sampled_from(["", " ", '"', ' "x']))
def test_the_stream_reads_each_line_as_parse_line_does(args, stamp, where, ending, junk):
    """The stream recognises command lines in a quicker way of its own: it must keep to
    `parse_line`, the reference, on well-formed and broken lines alike."""
    line = f"{stamp} {where} " + " ".join(monitor_quote(a) for a in args) + junk
    records, _, problems = parse_audit("OK\n" + line + ending + "# end\n")
    try:
        expected = parse_line(line, 2)
    except ValueError as e:
        assert records == [] and problems == [f"audit.log:2: unreadable line skipped ({e})"]
    else:
        assert records == [expected] and problems == []


def test_valkey_8_1_monitor_lines_parse_like_redis():
    """Lines as valkey-server 8.1 (--server valkey) wrote them: the same format as Redis 6.2's."""
    call = parse_line('1796132761.311533 [0 127.0.0.1:53806] "EVALSHA" "52cd5cf149e5c13344471122831b2d86b654ce56" '
                      '"1" "leasecheck:2fbf2201:job:0" "67bd0adf6829670ee575186b3dfc8c99"', 3)
    assert call.name == "EVALSHA" and call.addr == "127.0.0.1:53806" and call.argv[3] == "leasecheck:2fbf2201:job:0"
    inner = parse_line('1796132761.311591 [0 lua] "del" "leasecheck:2fbf2201:job:0"', 4)
    assert inner.addr == "lua" and inner.name == "DEL" and inner.time == pytest.approx(1796132761.311591, abs=1e-7)


@given(st.integers(min_value=0, max_value=2**64), st.integers(min_value=1, max_value=25))
def test_a_stamp_read_in_place_is_the_float_of_its_text(digits, after):
    """The stream reads a time's digits as one integer N and divides by 10**k: the same float as
    `float(text)` (both correctly rounded), wherever it takes that way (N below 2**53, k <= 22)."""
    text = str(digits).rjust(after + 1, "0")
    stamp = text[:-after] + "." + text[-after:]
    t = _stamp_time(stamp, len(stamp))
    if digits < 2**53 and after <= 22:
        assert t == float(stamp)
    else:
        assert t == -1.0


@pytest.mark.parametrize("text", ["", "1", "1.", ".1", "1.2.3", "1..2", "-1.5", "+1.5", "1e5", "1_0.5", " 1.5",
                                  "1.5 ", "１.5"])
def test_a_stamp_of_another_form_is_not_read_in_place(text):
    assert _stamp_time(text, len(text)) == -1.0
