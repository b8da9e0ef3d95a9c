"""leasecheck's harness: everything that runs.

Layout: ``cli`` (the command line) -> ``config`` (validated settings) -> ``runner`` (one run's
lifecycle), which starts a ``store`` backend, the ``audit`` recorder, and ``worker`` processes;
workers record ``history`` through audited ``connection``s. ``durations`` parses the duration
formats; ``report`` prints results; ``errors`` is the exception family.
"""
from harness.config import RunConfig, validate
from harness.errors import LeasecheckError, StoreError, UsageError

__all__ = ["RunConfig", "validate", "LeasecheckError", "StoreError", "UsageError"]
