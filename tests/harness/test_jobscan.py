"""leasecheck._jobscan.jobs: the job lines of a chunk of history found in one pass of C, where
setup.py built it, for the live progress (harness/run/live_stats.py). What it finds must be exactly
what the progress's regular expression finds (`_JOB_LINE`) in a chunk whose job tokens that
accounts for, and it may leave a chunk to the Python reading (None) — never read one the regular
expression does not account for."""
import random

from leasecheck.harness.run import live_stats
from tests.native import changed, function

LINES = [
    b'{"time":1000,"process":"w0.s0","type":"invoke","f":"acquire","attempt":"w0.s0.0","key":"lc:job:1"}',
    b'{"time":2000,"process":"w0.s0","type":"job_start","attempt":"w0.s0.0","key":"lc:job:1"}',
    b'{"time":2500,"process":"w0.s0","type":"effect","attempt":"w0.s0.0","key":"lc:job:1"}',
    b'{"time":3000,"process":"w0.s0","type":"job_end","attempt":"w0.s0.0","key":"lc:job:1","aborted":false}',
    b'{"time":3100,"process":"w1.s0","type":"job_start","attempt":"w1.s0.4","key":""}',
    b'{"time":0,"process":"","type":"job_end","attempt":"","key":"k","index":9}',
]
OTHER = [
    b'{"process":"w0.s0","time":1,"type":"job_start","attempt":"a","key":"k"}',       # another order
    b'{"time":1,"process":"w0.s0","type":"job_start","key":"k","attempt":"a"}',
    b'{"time":1,"process":"w\\"0","type":"job_start","attempt":"a","key":"k"}',      # an escape
    b'{"time":1,"process":"w0","type":"job_start","attempt":"a","key":"k\\u00e9"}',
    b'{"time":1234567890123456789012,"process":"w0","type":"job_start","attempt":"a","key":"k"}',  # 22 digits
    b'{"time":1,"process":"w0","type":"job_snd","attempt":"a","key":"k"}',           # no job type
    b'{"time":1, "process":"w0","type":"job_start","attempt":"a","key":"k"}',        # a space
    b'{"time":1,"process":"w0","type":"job_start","attempt":"a","key":"k","x":{"type":"job_end"}}',
]


def _regex(chunk: bytes):
    """What the progress reads with its regular expression alone (None: it does not account for
    every job token, and the progress would look at each line)."""
    found = live_stats._JOB_LINE.findall(b"\n" + chunk)
    if len(found) != chunk.count(live_stats._T_JOB):
        return None
    return [(int(t), 1 if kind == b"start" else -1, key) for t, kind, key in found]


def _native():
    return function("_jobscan", "jobs", live_stats._NATIVE_JOBS)


def test_the_c_scan_comes_with_the_compiled_progress():
    compiled = not live_stats.__file__.endswith(".py")
    assert (live_stats._NATIVE_JOBS is not None) == (compiled and _native() is not None)


def test_the_c_scan_finds_what_the_regular_expression_finds():
    jobs = _native()
    if jobs is None:
        return
    chunk = b"\n".join(LINES) + b"\n"
    assert jobs(chunk) == _regex(chunk) == [(2000, 1, b"lc:job:1"), (3000, -1, b"lc:job:1"), (3100, 1, b""),
                                            (0, -1, b"k")]
    assert jobs(b"") == [] and jobs(LINES[0] + b"\n") == []
    for odd in OTHER:
        assert jobs(chunk + odd + b"\n") is None, odd
        assert jobs(odd + b"\n" + chunk) is None, odd
    # the progress's own reading is the same either way, other shapes included
    for odd in OTHER:
        mixed = b"\n".join(LINES[:3] + [odd] + LINES[3:]) + b"\n"
        saved = live_stats._NATIVE_JOBS
        try:
            live_stats._NATIVE_JOBS = None
            by_python = live_stats._jobs(mixed)
        finally:
            live_stats._NATIVE_JOBS = saved
        assert live_stats._jobs(mixed) == by_python, odd


def test_on_changed_chunks_the_c_scan_never_reads_what_the_regular_expression_does_not():
    jobs = _native()
    if jobs is None:
        return
    rng = random.Random(5)
    alphabet = b'0123456789{}",:\\\n abjo_stredny'
    agreed = 0
    for _ in range(30_000):        # each chunk changed in up to three places
        chunk = changed(rng, b"\n".join(rng.sample(LINES, rng.randrange(1, len(LINES) + 1))) + b"\n", alphabet)
        got = jobs(chunk)
        if got is not None:
            assert got == _regex(chunk), chunk
            agreed += bool(got)
    assert agreed > 5_000
