"""The one exception family of the checkers.

`CheckError` is the base: catch it to handle any failure of a checker to read or judge a run.
`HistoryError` means there is no usable history, so nothing can be checked at all.
"""


class CheckError(Exception):
    """A run directory could not be checked. The message says why and, where it can, what to do."""


class HistoryError(CheckError):
    """The history is missing or empty: there is nothing to check."""
