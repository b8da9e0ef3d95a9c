"""A write the file system refuses is noted, not raised (``harness/record/writes``), on a real
full device (``/dev/full``: every write fails with ENOSPC)."""
import errno
from pathlib import Path

from leasecheck.events import RUN_START
from leasecheck.harness.record import writes
from leasecheck.harness.record.history import HistoryWriter


def test_a_history_on_a_full_device_stops_keeping_events_and_says_so_once():
    heard = []
    w = HistoryWriter("/dev/full", on_fail=heard.append)
    try:
        w.record("harness", RUN_START)
        w.flush()
        assert isinstance(w.failed, OSError) and w.failed.errno == errno.ENOSPC
        w.record("harness", RUN_START)      # kept no more: nothing to write, nothing raised
        w.flush()
        assert len(heard) == 1 and heard[0] is w.failed
        first = writes.failure("/dev")
        assert first is not None and first.path == Path("/dev/full")
        assert first.describe() == "could not write full (No space left on device)"
    finally:
        w.close()
        writes.forget("/dev")
    assert writes.failure("/dev") is None


def test_failures_belong_to_their_run_directory(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    writes.note(a / "audit.log", OSError(errno.ENOSPC, "No space left on device"))
    try:
        assert writes.failure(b) is None
        assert writes.failure(a).path.name == "audit.log"
    finally:
        writes.forget(a)
    assert writes.failure(a) is None


def test_the_message_is_one_line_with_what_was_kept_and_the_command(tmp_path):
    f = writes.Failure(tmp_path / "audit.log", OSError(errno.ENOSPC, "x"), 0)
    text = str(writes.Unwritable(tmp_path, f, ["history.d/: 3 files, 10 lines", "audit.log: 4 lines"], 1.25))
    assert "\n" not in text
    assert "could not write audit.log (No space left on device) at 1.2 s" in text
    assert "(history.d/: 3 files, 10 lines; audit.log: 4 lines)" in text
    assert text.endswith(f"judge it with: leasecheck check {tmp_path}")


def test_only_a_refusing_file_system_counts_as_unwritable():
    assert writes.unwritable(OSError(errno.ENOSPC, "full"))
    assert writes.unwritable(OSError(errno.EROFS, "read-only"))
    assert not writes.unwritable(OSError(errno.EBADF, "our bug"))
    assert not writes.unwritable(ValueError("not an OSError"))
