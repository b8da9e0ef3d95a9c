"""The nemesis: it carries out a run's fault schedule (`driver`) and heals every fault it started, through the ledger each fault writes before it acts (`heal`)."""
