"""The check pauses Python's cyclic garbage collector while it runs (`verdict.cycles_paused`):
that is only safe because it makes no garbage cycles per record — what it drops, reference
counting frees. Nor does it leave any once it is done: its measured run as a whole (claims, job
runs, the model's parts) is freed by reference counting too, as the check returns, where a cycle
among the model's parts would keep every claim until the collector walked them all (a tenth of a
real run's check)."""
import gc
import shutil
from pathlib import Path

import pytest

from leasecheck.checkers import check_run
from leasecheck.checkers.verdict import cycles_paused
from tests.checkers.test_streaming import _generate

DATA = Path(__file__).parent / "data"


def _cyclic_garbage_of_one_check(run) -> tuple[int, dict]:
    """(objects only the cyclic collector could free after one check of `run`, the result)."""
    gc.collect()
    gc.disable()
    try:
        result = check_run(run)
        return gc.collect(), result
    finally:
        gc.enable()


def test_a_check_leaves_no_cyclic_garbage_per_record(tmp_path):
    run = tmp_path / "run"
    events = _generate()(run, 30_000)
    garbage, result = _cyclic_garbage_of_one_check(run)
    assert result["valid"] is True and result["ops"] > 10_000
    # none: not per event or per call (15,000 calls here), not per claim, not per chunk read
    assert garbage < 50 and events > 3_000, garbage


@pytest.mark.parametrize("name", ["incident-plain-del-bad", "renew-shortens-foreign-bad", "client-retry"])
def test_the_saved_runs_leave_little_cyclic_garbage(name, tmp_path):
    shutil.copytree(DATA / name, tmp_path / name)
    garbage, result = _cyclic_garbage_of_one_check(tmp_path / name)
    assert "could not check" not in " ".join(result["reasons"])
    assert garbage < 50, garbage


def test_the_collector_is_paused_during_a_check_and_resumed_after_it_even_when_it_fails(tmp_path):
    assert gc.isenabled()
    seen = []
    with cycles_paused():
        seen.append(gc.isenabled())
    assert seen == [False] and gc.isenabled()
    with pytest.raises(RuntimeError):
        with cycles_paused():
            raise RuntimeError("a check that fails")
    assert gc.isenabled()
    gc.disable()                      # a caller that paused it itself keeps it paused
    try:
        with cycles_paused():
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()
    run = tmp_path / "run"
    _generate()(run, 2_000)
    check_run(run)
    assert gc.isenabled()
