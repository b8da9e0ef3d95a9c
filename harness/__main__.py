"""``python -m harness`` is the ``leasecheck`` command."""
from harness.cli import main

main()
