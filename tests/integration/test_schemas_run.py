"""A fresh run's directory satisfies the published JSON Schemas (docs/schemas/): every line of
its history, its results.json."""
from __future__ import annotations

import pytest
from schema_checks import assert_history_valid, assert_results_valid

from leasecheck.rundir import HISTORY, HISTORY_PARTS, load_results

pytestmark = pytest.mark.integration


def test_a_fresh_run_satisfies_the_schemas(leasecheck):
    r = leasecheck("run", "--lease", "naive-del", "--time-limit", "3", "--workers", "2")
    assert r.run_dir is not None, r.err
    assert (r.run_dir / HISTORY).is_file() and not (r.run_dir / HISTORY_PARTS).exists()
    assert assert_history_valid(r.run_dir) > 10
    results = load_results(r.run_dir)
    assert results["ops"] > 0
    assert_results_valid(results)
