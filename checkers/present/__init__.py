"""A checked run in words: the witness timeline, the diagnosis, the fault and node lines."""
