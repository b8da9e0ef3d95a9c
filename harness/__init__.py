"""leasecheck's harness: everything that runs.

Layout: ``cli`` (the command line) -> ``preflight`` (checks a ``config.RunConfig`` against the
machine and returns the run's ``Plan``) -> ``runner`` (one run's lifecycle), which starts a
``store`` backend, the ``audit`` recorder, ``worker`` processes and the ``nemesis`` (``faults``,
healed through the ``heal`` ledger); workers record ``history`` through audited ``connection``s.
``host`` holds the machine's facts (ports, processes, binaries), ``durations`` parses the duration
formats, ``report`` prints results, ``html_report`` draws them as ``report.html`` and
``index.html``, ``errors`` is the exception family. docs/architecture.md
draws the whole.

This package's ``__init__`` imports only leaves: ``workloads`` and ``checkers`` import the errors
from here, so importing the preflight here would close a circle.
"""
from leasecheck.harness.settings.config import RunConfig
from leasecheck.harness.errors import LeasecheckError, StoreError, UsageError

__all__ = ["RunConfig", "LeasecheckError", "StoreError", "UsageError"]
