"""The ``external`` store kind: a store the harness did not start (``--store-url``).

It is only asked to answer ``PING`` at the start; it is never stopped, flushed or faulted, and
the run touches only keys under its own prefix.
"""
from __future__ import annotations

import redis

from leasecheck.harness.errors import StoreError


class ExternalStore:
    """A store the harness does not manage (``--store-url``): it is never started, stopped,
    flushed or faulted; the run touches only keys under its own prefix."""

    kind = "external"
    managed = False
    faketime_file = None
    log_path = None
    pid = None

    def __init__(self, host: str, port: int, db: int = 0):
        self.host, self.port, self.db = host, port, db

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"

    def start(self, timeout_s: float = 5.0) -> None:
        try:
            redis.Redis(host=self.host, port=self.port, db=self.db, socket_timeout=timeout_s).ping()
        except redis.RedisError as e:
            raise StoreError(self._not_answering(e)) from None

    def _not_answering(self, e: Exception) -> str:
        return (f"--store-url redis://{self.host}:{self.port}/{self.db} does not answer "
                f"({e}); start that store or drop --store-url to use the embedded one")

    def stop(self, timeout_s: float = 5.0) -> None:
        pass

    # -- faults: never on a store the harness did not start (the preflight refuses them) ----
    def _refuse(self, what: str):
        raise StoreError(f"cannot {what} {self.address}: the harness never faults a store it did not start")

    def pause(self) -> None:
        self._refuse("pause")

    def resume(self) -> None:
        self._refuse("resume")

    def resume_entry(self) -> dict:
        self._refuse("pause")

    def is_paused(self) -> bool:
        return False

    def kill(self) -> None:
        self._refuse("kill")

    def restart(self, timeout_s: float = 5.0) -> None:
        self._refuse("restart")
