"""One direction of one proxied connection: source socket -> toxic stages -> destination socket.

With no active toxic in its direction a link is not in the data path at all: the source's
``data_received`` writes straight into the destination transport (the "fast path"). With
toxics, each chunk read gets a timestamp and goes through one :class:`Stage` per toxic, in
the proxy's order, then to the :class:`Writer`.

Stages hand chunks on synchronously (``next.feed``); a stage whose toxic is active keeps its
own queue and runs the toxic's ``pipe`` as a task. Because handing on never blocks, stages
can be added, restarted and removed between two events of the loop without losing or
reordering data. Back-pressure: the source is paused while more than ``HIGH_WATER`` bytes
are inside the link or while the destination's write buffer is full.
"""
from __future__ import annotations

import asyncio
import logging
import random
from collections import deque
from typing import Any, Callable, Protocol

from leasecheck.harness.proxy.stub import Chunk
from leasecheck.harness.proxy.toxics import Toxic

log = logging.getLogger("leasecheck.harness.proxy")

HIGH_WATER = 1 << 20   # bytes inside a link's stages before the source is paused
LOW_WATER = 1 << 18    # ... and resumed


class Endpoint(Protocol):
    """One socket of the connection, as a link sees it (``leasecheck.harness.proxy.connection.Side``)."""
    transport: Any
    on_data: Callable[[bytes], None]
    in_link: Any
    out_link: Any


def _wake(fut: asyncio.Future) -> None:
    if not fut.done():
        fut.set_result(None)


class Stage:
    """One toxic running on one link; what its ``pipe`` sees is ``leasecheck.harness.proxy.stub.ToxicStub``."""

    def __init__(self, link: Link, toxic: Toxic):
        self.link = link
        self.toxic = toxic
        self.next: Stage | Writer = link.writer
        self.queue: deque[Chunk] = deque()
        self.current: Chunk | None = None     # taken by the pipe, not yet passed on
        self.state = toxic.new_state()
        self.task: asyncio.Task | None = None
        self.waiter: asyncio.Future | None = None
        self.passthrough = True   # toxicity draw failed (or not started): chunks go straight on
        self.closed = False       # passed the end of the stream on; later input is dropped

    # -- lifecycle (driven by the link) --------------------------------------------------
    def start(self) -> None:
        """Draw toxicity (as Toxiproxy does each time it (re)starts a toxic on a link)."""
        self.passthrough = not random.random() < self.toxic.toxicity
        if self.passthrough:
            self._flush()
        else:
            self.task = self.link.loop.create_task(self._run())

    def restart(self) -> None:
        """The toxic was updated: stop its pipe, keep the data, draw again, run again."""
        if self.closed:
            return
        self._stop_task()
        self.start()

    def remove(self) -> None:
        """The toxic was deleted: pass everything it held on (or close, for ``timeout``)."""
        self._stop_task()
        if self.closed:
            return
        if self.toxic.CLOSES_ON_REMOVE:
            self.close()
        else:
            self._flush()
            self.closed = True

    def cancel(self) -> None:
        self._stop_task()
        self.closed = True

    def _stop_task(self) -> None:
        if self.task is not None:
            self.task.cancel()
            self.task = None
        if self.current is not None:   # hand the in-flight chunk back, in front
            self.queue.appendleft(self.current)
            self.current = None

    def _flush(self) -> None:
        while self.queue and not self.closed:
            self.emit(self.queue.popleft())

    async def _run(self) -> None:
        try:
            await self.toxic.pipe(self)
        except asyncio.CancelledError:
            raise
        except Exception:  # a toxic's bug ends the connection, not the proxy
            log.exception("toxic %s failed; closing the connection", self.toxic.name)
            self.close()

    # -- input ---------------------------------------------------------------------------
    def feed(self, chunk: Chunk) -> None:
        if self.closed:
            self.link.discard(chunk)
        elif self.passthrough:
            self.next.feed(chunk)
        else:
            self.queue.append(chunk)
            if self.waiter is not None:
                _wake(self.waiter)

    # -- what a toxic's pipe uses --------------------------------------------------------
    def now(self) -> float:
        return self.link.loop.time()

    async def get(self, timeout: float | None = None) -> Chunk | None:
        """Next chunk; ``None`` if ``timeout`` seconds pass with nothing queued."""
        while not self.queue:
            loop = self.link.loop
            fut = loop.create_future()
            self.waiter = fut
            timer = loop.call_later(timeout, _wake, fut) if timeout is not None else None
            try:
                await fut
            finally:
                if self.waiter is fut:
                    self.waiter = None
                if timer is not None:
                    timer.cancel()
            if timeout is not None and not self.queue:
                return None
        chunk = self.queue.popleft()
        self.current = chunk
        return chunk

    def emit(self, chunk: Chunk) -> None:
        if self.current is chunk:
            self.current = None
        if chunk.data is None:
            self.closed = True
        self.next.feed(chunk)

    def emit_head(self, chunk: Chunk, n: int) -> None:
        """Pass on the first ``n`` bytes of ``chunk``; it keeps the rest."""
        head = Chunk(chunk.data[:n], chunk.t)
        chunk.data = chunk.data[n:]
        self.next.feed(head)

    def drop(self, chunk: Chunk) -> None:
        if self.current is chunk:
            self.current = None
        self.link.discard(chunk)

    def close(self, abort: bool = False) -> None:
        """End the stream here: drop what is queued, pass the end on (RST if ``abort``)."""
        if self.closed:
            return
        if self.current is not None:
            self.link.discard(self.current)
            self.current = None
        while self.queue:
            self.link.discard(self.queue.popleft())
        self.emit(Chunk(None, self.now(), abort))


class Writer:
    """The end of a link: writes into the destination socket; the end of stream closes it."""

    def __init__(self, link: Link):
        self.link = link
        self.done = False

    def feed(self, chunk: Chunk) -> None:
        link = self.link
        if chunk.data is None:
            if not self.done:
                self.done = True
                link.refresh()
                link.on_end(link, chunk.abort)
            return
        link.inflight -= len(chunk.data)
        if not self.done and not link.dest_gone:
            link.dst.transport.write(chunk.data)
        link.maybe_resume()


class Link:
    """``on_end(link, abort)`` is called once when the stream's end reaches the destination: the
    connection decides what that closes (a link never reaches back into its connection)."""

    def __init__(self, loop: asyncio.AbstractEventLoop, direction: str, src: Endpoint, dst: Endpoint,
                 toxics: list[Toxic], on_end: Callable[["Link", bool], None]):
        self.on_end = on_end
        self.loop = loop
        self.direction = direction
        self.src = src
        self.dst = dst
        self.writer = Writer(self)
        self.stages: list[Stage] = []
        self.inflight = 0
        self.src_paused = False
        self.dest_paused = False
        self.eof_fed = False
        self.dest_gone = False
        src.in_link = self
        dst.out_link = self
        for toxic in toxics:
            self._append(Stage(self, toxic))

    def start(self) -> None:
        for stage in self.stages:
            stage.start()
        self.refresh()

    # -- wiring --------------------------------------------------------------------------
    def _append(self, stage: Stage) -> None:
        if self.stages:
            self.stages[-1].next = stage
        self.stages.append(stage)

    def _head(self) -> Stage | Writer:
        return self.stages[0] if self.stages else self.writer

    def refresh(self) -> None:
        """Choose the source's data path: straight to the destination when no stage is active."""
        if self.writer.done or self.dest_gone or self.eof_fed:
            self.src.on_data = self.discard_data
        elif all(st.passthrough and not st.closed for st in self.stages):
            self.src.on_data = self.dst.transport.write
        else:
            self.src.on_data = self.feed_data

    def add_toxic(self, toxic: Toxic) -> None:
        stage = Stage(self, toxic)
        self._append(stage)
        stage.start()
        self.refresh()

    def update_toxic(self, toxic: Toxic) -> None:
        for stage in self.stages:
            if stage.toxic is toxic:
                stage.restart()
        self.refresh()

    def remove_toxic(self, toxic: Toxic) -> None:
        for i, stage in enumerate(self.stages):
            if stage.toxic is toxic:
                if i > 0:
                    self.stages[i - 1].next = stage.next
                del self.stages[i]
                stage.remove()   # flushes into stage.next, which the previous stage now feeds
                break
        self.refresh()

    def cancel(self) -> None:
        for stage in self.stages:
            stage.cancel()

    # -- data ----------------------------------------------------------------------------
    def feed_data(self, data: bytes) -> None:
        self.inflight += len(data)
        self._head().feed(Chunk(data, self.loop.time()))
        if self.inflight > HIGH_WATER and not self.src_paused:
            self.src_paused = True
            self.src.transport.pause_reading()

    def discard_data(self, data: bytes) -> None:
        pass

    def feed_eof(self) -> None:
        if self.eof_fed:
            return
        self.eof_fed = True
        self.refresh()
        self._head().feed(Chunk(None, self.loop.time()))

    def discard(self, chunk: Chunk) -> None:
        if chunk.data is not None:
            self.inflight -= len(chunk.data)
            self.maybe_resume()

    # -- flow control --------------------------------------------------------------------
    def maybe_resume(self) -> None:
        if self.src_paused and self.inflight <= LOW_WATER and not self.dest_paused:
            self.src_paused = False
            self.src.transport.resume_reading()

    def set_dest_paused(self, paused: bool) -> None:
        self.dest_paused = paused
        if paused:
            if not self.src_paused:
                self.src_paused = True
                self.src.transport.pause_reading()
        else:
            self.maybe_resume()

    def dest_lost(self) -> None:
        self.dest_gone = True
        self.dest_paused = False
        self.refresh()
        self.maybe_resume()
