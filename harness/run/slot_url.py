"""The URL a lease declaring ``connect = "url"`` is given: ``redis://127.0.0.1:<port>/<db>``.

PLACEHOLDER (branch ``async-exec``), to be replaced by the ``wire`` branch's module of the same
name and function, which gives each slot a port of its own on the harness's path so that every
command a lease's own client sends is credited to its slot. Until then every slot gets the
address the audited client of that slot would use today (the workers' proxy when there is one,
else the store), and the commands of a URL lease's own client are unattributed: the checker says
so (inconclusive)."""
from __future__ import annotations


def slot_url(cfg, process: str) -> str:
    """The URL for slot ``process`` (``"w3.s1"``) of the run configured by ``cfg``."""
    return f"redis://{cfg.store_host}:{cfg.client_port or cfg.store_port}/{cfg.store_db}"
