"""What a worker does: the claim loop (``claim_loop``) and the lease implementations under
test (``leasecheck.workloads.leases``)."""
