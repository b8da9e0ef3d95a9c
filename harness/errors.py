"""The harness's exception family.

``UsageError`` is the user's mistake: the CLI prints its message as one line and exits 64
(``cli.EXIT_USAGE``) before anything starts; exit 2 is an inconclusive verdict. Anything else
escaping the harness is our own failure (exit 255).
"""


class LeasecheckError(Exception):
    """Base of every error the harness raises on purpose."""


class UsageError(LeasecheckError):
    """Bad input: the message is one line that names the value and the fix."""


class StoreError(LeasecheckError):
    """The store could not be started, reached or stopped."""
