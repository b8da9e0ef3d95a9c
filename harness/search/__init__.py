"""Tools that run many runs: hunt (fresh seeds until one fails), shrink (a smaller failing scenario), matrix (every lease under every fault mix)."""
