"""The address a slot's own-client lease is given: its port on the wire path."""
from __future__ import annotations


def slot_url(port: int, db: int = 0, host: str = "127.0.0.1") -> str:
    """``redis://127.0.0.1:<port>/<db>``: the URL a ``connect = "url"`` lease receives, ``port``
    the slot's listening port on the wire path (``leasecheck.harness.record.wire.Wire.listen``),
    ``db`` the run's store database (``--db``)."""
    if not isinstance(port, int) or isinstance(port, bool) or not 0 < port < 65536:
        raise ValueError(f"slot_url: port {port!r} is no TCP port (1-65535)")
    if not isinstance(db, int) or isinstance(db, bool) or db < 0:
        raise ValueError(f"slot_url: db {db!r} is no database number (0, 1, ...)")
    return f"redis://{host}:{port}/{db}"
