"""The toxics: one class per Toxiproxy toxic type, same names, attributes and units.

A toxic object is shared by every connection of its proxy (in its one direction, ``stream``).
Each connection runs it in its own stage (``leasecheck.harness.proxy.link.Stage``), which calls
:meth:`Toxic.pipe` as a task with itself as the ``ToxicStub`` (``leasecheck.harness.proxy.stub``): ``pipe`` takes chunks with ``await stage.get()`` and passes
them on with ``stage.emit`` / ``stage.emit_head``, discards them with ``stage.drop``, or ends
the connection with ``stage.close()`` (a normal close) or ``stage.close(abort=True)`` (TCP RST).
A chunk whose ``data`` is ``None`` is the end of the stream (its ``abort`` flag: end by RST).

Attribute updates restart the stage (see link.py), so a ``pipe`` may read its attributes at
any time; the in-flight chunk is handed back to the restarted pipe, never lost.
"""
from __future__ import annotations

import asyncio
import random
from typing import Any, ClassVar

from leasecheck.harness.proxy.errors import INVALID_STREAM, INVALID_TOXIC_TYPE, bad_request
from leasecheck.harness.proxy.stub import ToxicStub

UPSTREAM = "upstream"      # client -> server
DOWNSTREAM = "downstream"  # server -> client
STREAMS = (UPSTREAM, DOWNSTREAM)


def _int_attr(toxic_type: str, key: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise bad_request(f"bad request body: {toxic_type} attribute {key!r} must be an integer, "
                          f"got {value!r}")
    if isinstance(value, float):
        if not value.is_integer():
            raise bad_request(f"bad request body: {toxic_type} attribute {key!r} must be an "
                              f"integer, got {value!r}")
        value = int(value)
    if value < 0:
        raise bad_request(f"bad request body: {toxic_type} attribute {key!r} must not be "
                          f"negative, got {value}")
    return value


def parse_toxicity(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise bad_request(f"bad request body: toxicity must be a number, got {value!r}")
    return float(value)


def parse_stream(value: Any) -> str:
    if not isinstance(value, str) or value.lower() not in STREAMS:
        raise bad_request(INVALID_STREAM)
    return value.lower()


class Toxic:
    """Common part: name, stream, toxicity and the integer attributes of one toxic."""

    TYPE: ClassVar[str] = ""
    ATTRIBUTES: ClassVar[dict[str, int]] = {}   # attribute name -> default
    CLOSES_ON_REMOVE: ClassVar[bool] = False    # removing it ends the connections it sits on

    def __init__(self, name: str, stream: str, toxicity: float = 1.0,
                 attributes: dict | None = None):
        self.name = name
        self.stream = stream
        self.toxicity = toxicity
        self.attrs: dict[str, int] = dict(self.ATTRIBUTES)
        if attributes:
            self.update(attributes=attributes)

    # -- configuration -------------------------------------------------------------------
    def update(self, attributes: Any = None, toxicity: Any = None) -> None:
        """Merge ``attributes`` (unknown keys ignored, as Toxiproxy does) and ``toxicity``.

        All or nothing: on a bad value nothing changes and a 400 ``ApiError`` is raised.
        """
        if attributes is None:
            attributes = {}
        if not isinstance(attributes, dict):
            raise bad_request(f"bad request body: attributes must be an object, got {attributes!r}")
        new = dict(self.attrs)
        for key, value in attributes.items():
            if key in self.ATTRIBUTES:
                new[key] = _int_attr(self.TYPE, key, value)
        self.check(new)
        new_toxicity = self.toxicity if toxicity is None else parse_toxicity(toxicity)
        self.attrs = new
        self.toxicity = new_toxicity

    def check(self, attrs: dict[str, int]) -> None:
        """Refuse attribute combinations the toxic cannot run with (400)."""

    def to_json(self) -> dict:
        return {"attributes": dict(self.attrs), "name": self.name, "type": self.TYPE,
                "stream": self.stream, "toxicity": self.toxicity}

    def new_state(self) -> dict:
        """Per-connection state kept across restarts of the stage (limit_data's byte count)."""
        return {}

    # -- behaviour -----------------------------------------------------------------------
    async def pipe(self, stage: ToxicStub) -> None:
        raise NotImplementedError


class Latency(Toxic):
    """Each chunk leaves ``latency`` ± ``jitter`` ms after it was read; order is kept."""

    TYPE = "latency"
    ATTRIBUTES = {"latency": 0, "jitter": 0}

    async def pipe(self, stage: ToxicStub) -> None:
        while True:
            chunk = await stage.get()
            if chunk.data is None:        # the close is not delayed (slow_close does that)
                stage.emit(chunk)
                return
            delay_ms = self.attrs["latency"]
            jitter = self.attrs["jitter"]
            if jitter > 0:
                delay_ms += random.uniform(-jitter, jitter)
            due = chunk.t + delay_ms / 1000.0
            wait = due - stage.now()
            if wait > 0:
                await asyncio.sleep(wait)
            chunk.t = max(due, chunk.t)   # a later latency toxic counts from here
            stage.emit(chunk)


class Bandwidth(Toxic):
    """At most ``rate`` KB/s (1 KB = 1000 bytes); 0 = unlimited.

    Paced in slices of at most 100 ms worth of data; a slice leaves once its time at the
    given rate has passed, so an idle link does not build up credit.
    """

    TYPE = "bandwidth"
    ATTRIBUTES = {"rate": 0}

    async def pipe(self, stage: ToxicStub) -> None:
        free_at = stage.now()
        while True:
            chunk = await stage.get()
            if chunk.data is None:
                stage.emit(chunk)
                return
            while True:
                rate = self.attrs["rate"]
                if rate <= 0:
                    stage.emit(chunk)
                    break
                bytes_per_s = rate * 1000.0
                part = min(len(chunk.data), max(1, rate * 100))  # <= 100 ms worth
                free_at = max(free_at, stage.now()) + part / bytes_per_s
                wait = free_at - stage.now()
                if wait > 0:
                    await asyncio.sleep(wait)
                if part >= len(chunk.data):
                    stage.emit(chunk)
                    break
                stage.emit_head(chunk, part)


class SlowClose(Toxic):
    """Data passes untouched; the close is passed on ``delay`` ms late."""

    TYPE = "slow_close"
    ATTRIBUTES = {"delay": 0}

    async def pipe(self, stage: ToxicStub) -> None:
        while True:
            chunk = await stage.get()
            if chunk.data is None:
                await asyncio.sleep(self.attrs["delay"] / 1000.0)
                stage.emit(chunk)
                return
            stage.emit(chunk)


class Timeout(Toxic):
    """Nothing gets through (data is dropped).

    ``timeout`` > 0: the connection is closed once ``timeout`` ms pass with no data arriving
    at the toxic (each chunk restarts the clock). ``timeout`` = 0: never closed by the toxic.
    Removing the toxic closes the connections it sat on (Toxiproxy's ``Cleanup``).
    """

    TYPE = "timeout"
    ATTRIBUTES = {"timeout": 0}
    CLOSES_ON_REMOVE = True

    async def pipe(self, stage: ToxicStub) -> None:
        while True:
            timeout_ms = self.attrs["timeout"]
            chunk = await stage.get(timeout=timeout_ms / 1000.0 if timeout_ms > 0 else None)
            if chunk is None or chunk.data is None:   # timed out, or the stream ended
                stage.close()
                return
            stage.drop(chunk)


class ResetPeer(Toxic):
    """The first chunk that reaches the toxic (data or close) arms it; ``timeout`` ms later
    both sides of the connection get a TCP RST. Data from the arming chunk on is dropped."""

    TYPE = "reset_peer"
    ATTRIBUTES = {"timeout": 0}

    async def pipe(self, stage: ToxicStub) -> None:
        chunk = await stage.get()
        stage.drop(chunk)
        timeout_ms = self.attrs["timeout"]
        if timeout_ms > 0:
            await asyncio.sleep(timeout_ms / 1000.0)
        stage.close(abort=True)


class Slicer(Toxic):
    """Cuts each chunk into pieces of ``average_size`` ± ``size_variation`` bytes with
    ``delay`` microseconds after each piece. Every byte is delivered, in order."""

    TYPE = "slicer"
    ATTRIBUTES = {"average_size": 0, "size_variation": 0, "delay": 0}

    def check(self, attrs: dict[str, int]) -> None:
        if attrs["average_size"] < 1:
            raise bad_request("bad request body: slicer attribute 'average_size' must be >= 1")

    def _piece(self, remaining: int) -> int:
        size = self.attrs["average_size"]
        var = self.attrs["size_variation"]
        if var > 0:
            size += random.randint(-var, var)
        return min(max(size, 1), remaining)

    async def pipe(self, stage: ToxicStub) -> None:
        while True:
            chunk = await stage.get()
            if chunk.data is None:
                stage.emit(chunk)
                return
            while chunk.data:
                piece = self._piece(len(chunk.data))
                last = piece >= len(chunk.data)
                if last:
                    stage.emit(chunk)
                else:
                    stage.emit_head(chunk, piece)
                delay_us = self.attrs["delay"]
                if delay_us > 0:
                    await asyncio.sleep(delay_us / 1e6)
                if last:
                    break


class LimitData(Toxic):
    """Passes the first ``bytes`` bytes of the stream (per connection), then closes it."""

    TYPE = "limit_data"
    ATTRIBUTES = {"bytes": 0}

    def new_state(self) -> dict:
        return {"sent": 0}

    async def pipe(self, stage: ToxicStub) -> None:
        state = stage.state
        while True:
            chunk = await stage.get()
            if chunk.data is None:
                stage.emit(chunk)
                return
            limit = self.attrs["bytes"]
            remaining = max(limit - state["sent"], 0)
            if len(chunk.data) > remaining:
                if remaining:
                    stage.emit_head(chunk, remaining)
                stage.drop(chunk)           # the part past the limit
                state["sent"] += remaining
            else:
                state["sent"] += len(chunk.data)
                stage.emit(chunk)
            if limit - state["sent"] <= 0:
                stage.close()
                return


TOXIC_TYPES: dict[str, type[Toxic]] = {
    cls.TYPE: cls for cls in (Latency, Bandwidth, SlowClose, Timeout, ResetPeer, Slicer, LimitData)
}


def make_toxic(body: Any) -> Toxic:
    """A toxic from a create request's JSON body, attributes not yet applied.

    Checked in Toxiproxy's order: body, stream, type (400s). The caller then checks the name
    is free (409) and applies ``body.get("attributes")`` with :meth:`Toxic.update` (400).
    """
    if not isinstance(body, dict):
        raise bad_request("bad request body: expected a JSON object")
    stream = parse_stream(body.get("stream") or DOWNSTREAM)
    toxic_type = body.get("type")
    name = body.get("name") or f"{toxic_type}_{stream}"
    if not isinstance(name, str):
        raise bad_request(f"bad request body: name must be a string, got {name!r}")
    cls = TOXIC_TYPES.get(toxic_type) if isinstance(toxic_type, str) else None
    if cls is None:
        raise bad_request(INVALID_TOXIC_TYPE)
    toxicity = body.get("toxicity")
    return cls(name=name, stream=stream,
               toxicity=1.0 if toxicity is None else parse_toxicity(toxicity))
