"""PLACEHOLDER on branch ``async-exec`` — take the ``wire`` branch's module in the merge.

The URL a ``connect = "url"`` lease is given, with the ``wire`` branch's signature. Until that
branch is merged the worker passes the port the slot's audited client uses today (the workers'
proxy, else the store): the commands of a URL lease's own client then reach the store unnumbered,
and the checker says so (inconclusive, "unattributed")."""
from __future__ import annotations


def slot_url(port: int, db: int = 0, host: str = "127.0.0.1") -> str:
    """``redis://127.0.0.1:<port>/<db>``."""
    return f"redis://{host}:{port}/{db}"
