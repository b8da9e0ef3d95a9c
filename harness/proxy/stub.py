"""What a toxic sees of the connection it runs on — Toxiproxy's ``ToxicStub``, as a protocol.

A toxic's ``pipe(stub)`` takes chunks with ``await stub.get()`` and passes them on with
``stub.emit`` / ``stub.emit_head``, discards them with ``stub.drop``, or ends the stream with
``stub.close()`` (a normal close) or ``stub.close(abort=True)`` (TCP RST); ``stub.now()`` is the
loop's clock and ``stub.state`` the toxic's own per-connection state. The toxics program against
this module only, and the link's ``Stage`` implements it, so neither imports the other's module
for what they exchange.
"""
from __future__ import annotations

from typing import Protocol


class Chunk:
    """Bytes read at loop time ``t``; ``data is None`` marks the end of the stream."""

    __slots__ = ("data", "t", "abort")

    def __init__(self, data: bytes | None, t: float, abort: bool = False):
        self.data = data
        self.t = t
        self.abort = abort   # end of stream by TCP RST rather than a normal close


class ToxicStub(Protocol):
    state: dict

    def now(self) -> float: ...

    async def get(self, timeout: float | None = None) -> Chunk | None: ...

    def emit(self, chunk: Chunk) -> None: ...

    def emit_head(self, chunk: Chunk, n: int) -> None: ...

    def drop(self, chunk: Chunk) -> None: ...

    def close(self, abort: bool = False) -> None: ...
