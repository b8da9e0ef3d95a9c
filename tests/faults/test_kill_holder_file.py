"""`kill:holder` kills the holder only once its own history file shows the claim the slot board
says it holds (or after a bound): the worker writes its history every 50 ms, later when the machine
is loaded, and a SIGKILL loses what is still in its buffer — the dying attempt with it."""
import threading
import time

import orjson

from leasecheck.harness.faults.kill_holder import _on_file, died


def _line(**e) -> bytes:
    return orjson.dumps(e) + b"\n"


def test_it_waits_for_the_flush_that_writes_the_holders_acquire(tmp_path):
    path = tmp_path / "w1.jsonl"
    path.write_bytes(_line(process="w1.s0", type="invoke", f="acquire", attempt="w1.s0.3", key="k")
                     + _line(process="w1.s0", type="fail", f="acquire", attempt="w1.s0.3", value=False))
    written = []

    def flush_later():
        time.sleep(0.2)
        with path.open("ab") as f:
            f.write(_line(process="w1.s0", type="invoke", f="acquire", attempt="w1.s0.4", key="k")
                    + _line(process="w1.s0", type="ok", f="acquire", attempt="w1.s0.4", value=True))
        written.append(time.monotonic())

    t = threading.Thread(target=flush_later)
    t.start()
    assert _on_file(path, ["w1.s0"], time.monotonic() + 30) is True
    done = time.monotonic()
    t.join()
    assert written and done >= written[0]          # not before the flush came
    assert died(path) == ["w1.s0.4"]


def test_it_gives_up_at_its_deadline_and_the_kill_goes_ahead(tmp_path):
    path = tmp_path / "w2.jsonl"
    path.write_bytes(_line(process="w2.s0", type="invoke", f="acquire", attempt="w2.s0.1", key="k"))
    t0 = time.monotonic()
    assert _on_file(path, ["w2.s1"], t0 + 0.1) is False      # the other slot's attempt never came
    assert time.monotonic() >= t0 + 0.1
    assert _on_file(tmp_path / "absent.jsonl", ["w2.s0"], time.monotonic()) is False
