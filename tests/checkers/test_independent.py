"""The project's checker against a second one written from docs/history.md alone
(tests/checkers/independent/checker.py, which imports nothing of leasecheck): foreign releases
(who removed whose claim, on which audit line, and whether the victim's job was running), claims
seen (claims and objects), overlap and releases that found nothing must be the same on every
saved run directory. `tests/integration/test_independent_runs.py` does the same on fresh runs."""
from pathlib import Path

import pytest

from leasecheck.checkers import check_run
from independent.checker import check

DATA = Path(__file__).parent / "data"


def project_counts(run_dir) -> dict:
    r = check_run(run_dir)
    seen = r["claims_seen"] or {"count": None, "keys": None}
    assert len(r["foreign_releases_first"]) == r["foreign_releases"]      # every one listed (few here)
    return {"foreign": [(f["attempt"], f["victim"], f["line"], f["victim_job_running"])
                        for f in r["foreign_releases_first"]],
            "claims": seen["count"], "fates": {k: v for k, v in (r["claims"] or {}).items() if v},
            "objects": seen["keys"], "overlap": r["overlap"]["count"],
            "found_nothing": r["releases_found_nothing"]}


@pytest.mark.parametrize("name", sorted(p.name for p in DATA.iterdir()))
def test_the_independent_checker_agrees_on_every_saved_run(name):
    assert check(DATA / name) == project_counts(DATA / name)


def test_the_independent_checker_gives_the_hand_counts():
    # (tests/checkers/test_ownership.py counts these by hand, line by line)
    assert check(DATA / "counter-zero-release-bad")["foreign"] == [("w0.s0.0", "w1.s0.0", 12, False),
                                                                  ("w1.s0.0", "w2.s0.0", 16, True)]
    assert check(DATA / "getdel-writeback-bad")["foreign"] == [("w0.s0.0", "w1.s0.0", 8, True)]
    assert check(DATA / "hash-field-hdel-bad") | {"foreign": None} == {
        "foreign": None, "claims": 4, "objects": 2, "overlap": 2, "found_nothing": 0,
        "fates": {"expired_while_held": 1, "foreign_release": 2, "still_held": 1}}
    assert check(DATA / "incident-plain-del-bad")["foreign"] == [("w0.s0.0", "w1.s0.0", 7, True)]
