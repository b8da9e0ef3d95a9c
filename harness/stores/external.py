"""The ``external`` store kind: a store the harness did not start (``--store-url``).

It is only asked to answer ``PING`` at the start; it is never stopped, flushed or faulted, and
the run touches only keys under its own prefix.
"""
from __future__ import annotations

import redis

from harness.errors import StoreError


class ExternalStore:
    """A store the harness does not manage (``--store-url``): it is never started, stopped,
    flushed or faulted; the run touches only keys under its own prefix."""

    managed = False

    def __init__(self, host: str, port: int, db: int = 0):
        self.host, self.port, self.db = host, port, db

    def start(self, timeout_s: float = 5.0) -> None:
        try:
            redis.Redis(host=self.host, port=self.port, db=self.db, socket_timeout=timeout_s).ping()
        except redis.RedisError as e:
            raise StoreError(f"--store-url redis://{self.host}:{self.port}/{self.db} does not answer "
                             f"({e}); start that store or drop --store-url to use the embedded one") from None

    def stop(self, timeout_s: float = 5.0) -> None:
        pass

    pid = None
