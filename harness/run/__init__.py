"""One run as it happens: the preflight and its plan, the runner, the workers, and what the harness reads of them while they go."""
