"""The check pauses Python's cyclic garbage collector while it runs (`verdict.cycles_paused`):
that is only safe because it makes no garbage cycles per record — what it drops, reference
counting frees. The only cyclic garbage a check leaves is its measured run as a whole (claims,
job runs, the model's parts pointing at each other), once it is done with it."""
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
    # the measured run as a whole (369 objects for this run when written): a few per claim, never
    # one per event or per call (15,000 calls here)
    assert garbage < 3_000 < events, garbage


@pytest.mark.parametrize("name", ["incident-plain-del-bad", "renew-shortens-foreign-bad", "client-retry"])
def test_the_saved_runs_leave_little_cyclic_garbage(name, tmp_path):
    shutil.copytree(DATA / name, tmp_path / name)
    garbage, result = _cyclic_garbage_of_one_check(tmp_path / name)
    assert "could not check" not in " ".join(result["reasons"])
    assert garbage < 1_000      # (about a hundred when written)


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
