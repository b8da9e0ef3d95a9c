"""Bad input: one line naming the fix, exit 64, and nothing started (no run directory)."""
import socket

import pytest

from leasecheck.harness.cli import EXIT_USAGE


@pytest.mark.parametrize("args,words", [
    (["--lease", "no-such-lease"], ["naive-del", "token-cas", "FILE.py:Class"]),
    (["--ttl", "0"], ["--ttl", "greater than 0"]),
    (["--ttl", "fast"], ["--ttl", "400ms"]),
    (["--workers", "0"], ["--workers", "at least 1"]),
    (["--store-bin", "/nonexistent/redis-server"], ["--store-bin", "no such file"]),
    (["--store-bin", "/bin/true"], ["does not look like redis-server"]),
    (["--job-duration", "60%:1s,60%:2s"], ["--job-duration", "100%"]),
    (["--max-overlap", "2"], ["--max-overlap", "between 0 and 1"]),
    (["--store-url", "http://x"], ["redis://HOST:PORT/DB"]),
    (["--no-such-flag"], ["No such option"]),
])
def test_one_line_error_and_nothing_starts(leasecheck, tmp_path, args, words):
    r = leasecheck("run", *args)
    assert r.code == EXIT_USAGE, r.out + r.err
    assert len(r.err.strip().splitlines()) == 1, r.err
    for w in words:
        assert w in r.err
    assert "Traceback" not in r.err
    assert not (tmp_path / "results").exists()


def test_occupied_port(leasecheck, tmp_path):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        r = leasecheck("run", "--store-port", str(port))
    assert r.code == EXIT_USAGE
    assert f"--store-port {port} is already in use" in r.err
    assert not (tmp_path / "results").exists()


def test_plugin_that_fails_to_import_shows_its_traceback(leasecheck, tmp_path):
    bad = tmp_path / "broken_lease.py"
    bad.write_text("import no_such_module_here\n\nclass Lease: pass\n")
    r = leasecheck("run", "--lease", f"{bad}:Lease")
    assert r.code == EXIT_USAGE
    assert "failed to import" in r.err and "Traceback" in r.err
    assert "no_such_module_here" in r.err
    assert not (tmp_path / "results").exists()


def test_plugin_without_release(leasecheck, tmp_path):
    f = tmp_path / "half_lease.py"
    f.write_text("class Lease:\n    def __init__(self, c, k, t): pass\n    def acquire(self): return True\n")
    r = leasecheck("run", "--lease", f"{f}:Lease")
    assert r.code == EXIT_USAGE and "no release() method" in r.err


def test_check_of_a_missing_directory(leasecheck, tmp_path):
    r = leasecheck("check", str(tmp_path / "nope"))
    assert r.code == EXIT_USAGE and "no such run directory" in r.err


def test_more_workers_than_the_machine_holds(leasecheck, tmp_path):
    """Issue 23: 100000 workers were accepted, ran past 120 s and found no history to check."""
    import time
    start = time.monotonic()
    r = leasecheck("run", "--workers", "100000", "--time-limit", "3", timeout=30)
    assert time.monotonic() - start < 15
    assert r.code == EXIT_USAGE, r.out + r.err
    assert len(r.err.strip().splitlines()) == 1, r.err
    assert "--workers 100000" in r.err and "memory" in r.err and "use at most" in r.err
    assert not (tmp_path / "results").exists()
