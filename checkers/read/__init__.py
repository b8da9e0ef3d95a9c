"""Reading a run directory: the history, the audit, the small files, and the records derived from the history alone."""
