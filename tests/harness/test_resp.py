"""Cutting RESP byte streams into whole commands and whole replies (the wire path's parser)."""
import pytest

from leasecheck.harness.record.resp import error_text, is_push, reply_end, split_commands, wrote

SET = b"*5\r\n$3\r\nSET\r\n$1\r\nk\r\n$3\r\ntok\r\n$2\r\nNX\r\n$2\r\nPX\r\n"


def test_a_pipeline_is_cut_into_commands_and_a_partial_one_waits():
    ping = b"*1\r\n$4\r\nPING\r\n"
    whole = ping + b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\nv\r\n"
    for cut in range(len(ping), len(whole)):
        buf = bytearray(whole[:cut])
        commands, used = split_commands(buf)
        assert [args for args, _ in commands] == [[b"PING"]] and used == len(ping)
    commands, used = split_commands(bytearray(whole))
    assert [args for args, _ in commands] == [[b"PING"], [b"SET", b"k", b"v"]] and used == len(whole)
    assert b"".join(raw for _, raw in commands) == whole


def test_binary_arguments_and_inline_commands():
    blob = b"a\r\nb\x00"
    req = b"*2\r\n$4\r\nECHO\r\n$%d\r\n%s\r\nPING\r\nSET k  v\n" % (len(blob), blob)
    commands, used = split_commands(bytearray(req))
    assert [args for args, _ in commands] == [[b"ECHO", blob], [b"PING"], [b"SET", b"k", b"v"]]
    assert used == len(req)


def test_garbage_is_a_protocol_error():
    with pytest.raises(ValueError):
        split_commands(bytearray(b"*1\r\n:5\r\n"))


@pytest.mark.parametrize("reply", [
    b"+OK\r\n", b"-ERR unknown command 'FOO'\r\n", b":1\r\n", b"$-1\r\n", b"$3\r\nabc\r\n",
    b"*2\r\n$1\r\na\r\n:2\r\n", b"*-1\r\n", b"_\r\n", b"#t\r\n", b",1.5\r\n", b"(123\r\n",
    b"=7\r\ntxt:abc\r\n", b"!9\r\nERR oops!\r\n", b"%1\r\n+k\r\n*1\r\n:1\r\n", b"~2\r\n:1\r\n:2\r\n",
    b"|1\r\n+ttl\r\n:3\r\n+OK\r\n", b">2\r\n+message\r\n$1\r\nx\r\n",
])
def test_every_reply_type_ends_where_it_ends(reply):
    for cut in range(len(reply)):
        assert reply_end(bytearray(reply[:cut] ), 0) is None
    buf = bytearray(reply + b"+NEXT\r\n")
    assert reply_end(buf, 0) == len(reply)
    assert reply_end(buf, len(reply)) == len(buf)


def test_what_a_reply_says():
    assert error_text(b"-OOM command not allowed\r\n") == "OOM command not allowed"
    assert error_text(b"!9\r\nERR oops!\r\n") == "ERR oops!"
    assert error_text(b"+OK\r\n") is None
    assert [wrote(r) for r in (b"+OK\r\n", b":1\r\n", b"$-1\r\n", b"_\r\n", b":0\r\n", b"+QUEUED\r\n")] == \
        [1, 1, 0, 0, 0, None]
    assert is_push(b">2\r\n") and not is_push(b"*2\r\n")
