"""The store model and the join: audit lines attributed to lease calls, replayed against a model of the store's keys."""
