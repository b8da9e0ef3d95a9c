"""leasecheck: a Jepsen-style fault-injection harness for leases on a shared, volatile store.

The installed package holds the repository's three halves as subpackages: ``leasecheck.harness``
(everything that runs), ``leasecheck.workloads`` (what a worker does, the leases under test) and
``leasecheck.checkers`` (reading a run directory and judging it); ``leasecheck.protocol`` names
what one half writes into a run directory and the other reads.
"""
