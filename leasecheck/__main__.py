"""``python -m leasecheck`` is the ``leasecheck`` command."""
from leasecheck.harness.cli import main

main()
