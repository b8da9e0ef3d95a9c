"""The ``leasecheck_run`` pytest fixture: a team checks its own lease from its own test suite.

Registered through the ``pytest11`` entry point, so installing leasecheck is enough. Each call is
`leasecheck.run` (the Python API, the same pipeline as ``leasecheck run``) with the run directory
under the test's ``tmp_path``, so a test sees exactly the verdict the command line would give.
Loading this module imports only ``leasecheck``'s light top (the API loads on the first call),
because every pytest session in an environment with leasecheck loads it.
"""
from __future__ import annotations

import pytest

import leasecheck

RESULTS_KEY = pytest.StashKey[list]()


@pytest.fixture
def leasecheck_run(request, tmp_path):
    """Call ``leasecheck_run(lease=MyLease, nemesis=["pause:holder"], time_limit=10, ...)`` with any
    `leasecheck.run` keyword (every ``leasecheck run`` option); returns its `leasecheck.Result`.
    Runs go to ``tmp_path/leasecheck``. Bad input fails the test with its one-line error, before
    anything starts. When the test fails, its report gets a section per run with the verdict, the
    counts, the reasons and the witness."""
    results = request.node.stash.setdefault(RESULTS_KEY, [])

    def run(lease, **options):
        options.setdefault("results_dir", str(tmp_path / "leasecheck"))
        try:
            result = leasecheck.run(lease=lease, **options)
        except leasecheck.UsageError as e:
            pytest.fail(f"leasecheck: {e}", pytrace=False)
        except leasecheck.LeasecheckError as e:
            pytest.fail(f"leasecheck could not carry out the run: {e}", pytrace=False)
        results.append(result)
        return result
    return run


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    """A failing test that ran leases shows why each run got its verdict, whatever it asserted."""
    report = yield
    if report.failed and call.when == "call":
        for i, result in enumerate(item.stash.get(RESULTS_KEY, []), 1):
            report.sections.append((f"leasecheck run {i}", result.explain()))
    return report
