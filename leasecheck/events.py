"""The history's events, named once: their types, each type's fields, and the one encoding of a
line of ``history.jsonl`` / ``history.d/*.jsonl`` that the harness writes and the checker reads.

The harness records with ``HistoryWriter.record(process, TYPE, **fields)`` (``encode_event``
makes the line); the checker's reader yields the dicts ``parse_event`` accepts, and both name
types and fields with the constants here. ``EVENTS`` says which fields each type has;
``docs/schemas/history-event.schema.json`` is generated from it (``event_schema``) and
``docs/history.md`` lists the same types and fields in words. Like ``leasecheck.protocol``, this
module imports nothing of the harness or the checker.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Final

import orjson

# -- types ------------------------------------------------------------------------------------------
# Operation types of a lease call (Jepsen's): invoked, then ok (happened), fail (certainly did
# not) or info (unknown: it may take effect at any later time).
INVOKE: Final = "invoke"
OK: Final = "ok"
FAIL: Final = "fail"
INFO: Final = "info"
COMPLETIONS: Final = (OK, FAIL, INFO)
# A command a lease's own thread sent after its call returned (`leasecheck.harness.record.connection`):
# credited to that call (attempt, f, invoked = its invocation's time) by the checker.
LATE_SENT: Final = "late_sent"
# A connection accepted on a slot's port of the wire path (``leasecheck.harness.record.wire``), once its
# marker went upstream: its name and the address the store sees it from.
WIRE_CONN: Final = "wire_conn"
# A lease call still running after the run's call bound (``--call-timeout``): the worker's own
# report, with the stack of the thread making it, once per call (its invocation stays open).
CALL_HUNG: Final = "call_hung"
# Events of the run and its processes.
RUN_START: Final = "run_start"
RUN_END: Final = "run_end"
WORKER_START: Final = "worker_start"
WORKER_END: Final = "worker_end"
SLOT_CRASH: Final = "slot_crash"
JOB_START: Final = "job_start"
JOB_END: Final = "job_end"
EFFECT: Final = "effect"
LEASE_ERROR: Final = "lease_error"
# Events of the nemesis: each fault starts and ends (with what it measured), or never fired.
FAULT_START: Final = "fault_start"
FAULT_END: Final = "fault_end"
FAULT_NOT_FIRED: Final = "fault_not_fired"
# kill:holder SIGKILLed a worker: the attempts that died with it (their jobs end here).
WORKER_KILLED: Final = "worker_killed"
# A fault may judge its own effect in ``fault_end.measured`` (``took_effect``: true / false / null,
# ``why``) when the checker has no rule of its own for that fault kind.
MEASURED_TOOK_EFFECT: Final = "took_effect"
MEASURED_WHY: Final = "why"

# -- what a lease call is --------------------------------------------------------------------------
# ``f`` of a call: the lease's methods, and ``effect`` (with --sink: the job's write to the sinks).
ACQUIRE: Final = "acquire"
RELEASE: Final = "release"
RENEW: Final = "renew"
F_EFFECT: Final = "effect"
CALLS: Final = (ACQUIRE, RELEASE, RENEW, F_EFFECT)

# -- processes -----------------------------------------------------------------------------------
HARNESS: Final = "harness"   # worker processes are "w3", their slots "w3.s1"
NEMESIS: Final = "nemesis"

# -- fields ---------------------------------------------------------------------------------------
# Every event: ``time`` (int ns since the run's start), ``process``, ``type``; the merged file adds
# ``index`` (0-based position).
TIME: Final = "time"
PROCESS: Final = "process"
TYPE: Final = "type"
INDEX: Final = "index"

_INT, _STR, _BOOL, _OBJ, _LIST = ({"type": "integer"}, {"type": "string"}, {"type": "boolean"},
                                  {"type": "object"}, {"type": "array"})
_ANY: dict = {}
# ``sent``: ``[conn, seq, name]`` or ``[conn, seq, name, reply]`` per command (docs/history.md).
_SENT = {"type": "array", "items": {"type": "array", "minItems": 3, "maxItems": 4,
                                    "prefixItems": [_STR, {"type": ["integer", "null"]}, _STR,
                                                    {"enum": [0, 1]}]}}
_F = {"enum": list(CALLS)}


@dataclass(frozen=True)
class Event:
    """One event type: its fields (JSON Schema of each value), those every event of the type
    has, and what it means (the schema's description)."""
    meaning: str
    required: dict[str, dict] = field(default_factory=dict)
    optional: dict[str, dict] = field(default_factory=dict)


_CALL = {"f": _F, "attempt": _STR, "key": _STR}
EVENTS: dict[str, Event] = {
    RUN_START: Event("the harness started the workers", {"config": _OBJ}, {"schema_version": _INT}),
    RUN_END: Event("the harness stopped", {"reason": _STR}, {"stopped_at": _INT, "signal": _STR}),
    WORKER_START: Event("a worker process began", {"pid": _INT}),
    WORKER_END: Event("a worker process finished cleanly", {"pid": _INT}, {"reason": _STR}),
    SLOT_CRASH: Event("one of a worker's claim loops died of an exception", {"error": _STR}),
    INVOKE: Event("a lease call begins", _CALL, {"fence": _ANY}),
    OK: Event("it returned value", {**_CALL, "value": _ANY}, {"sent": _SENT, "fence": _ANY}),
    FAIL: Event("it certainly had no effect", {**_CALL, "value": _ANY}, {"sent": _SENT, "fence": _ANY}),
    INFO: Event("it raised: outcome unknown", {**_CALL, "error": _STR}, {"sent": _SENT, "fence": _ANY}),
    LATE_SENT: Event("a command the lease's own thread sent after the call had returned",
                     {**_CALL, "invoked": _INT, "sent": _SENT}),
    WIRE_CONN: Event("a connection on the slot's wire-path port was numbered from here: its name and "
                     "the upstream address the store's audit shows it from", {"conn": _STR, "addr": _STR}),
    CALL_HUNG: Event("a lease call had not returned within the call bound; the stack of its thread",
                     {**_CALL, "invoked": _INT, "running_s": {"type": "number"}, "bound_s": {"type": "number"},
                      "stack": _STR}),
    JOB_START: Event("the job began", {"attempt": _STR, "key": _STR}),
    JOB_END: Event("the job ended", {"attempt": _STR, "key": _STR}, {"aborted": _BOOL}),
    EFFECT: Event("the job's effect was written (before the release)", {"attempt": _STR, "key": _STR},
                  {"fence": _ANY, "fenced_accepted": _ANY}),
    LEASE_ERROR: Event("the lease's constructor raised (nothing claimed)",
                       {"attempt": _STR, "key": _STR, "error": _STR}, {"sent": _SENT}),
    FAULT_START: Event("fault step n begins", {"fault": _STR, "target": _STR, "n": _INT, "requested": _OBJ},
                       {"node": _STR}),
    FAULT_END: Event("fault step n was healed; what the harness measured", {"fault": _STR, "target": _STR,
                                                                              "n": _INT, "measured": _OBJ}),
    WORKER_KILLED: Event("kill:holder killed a worker (SIGKILL, reaped); the attempts that died with it",
                         {"worker": _STR, "pid": _INT, "attempts": {"type": "array", "items": _STR}}, {"n": _INT}),
    FAULT_NOT_FIRED: Event("fault step n never started", {"fault": _STR, "target": _STR, "n": _INT,
                                                          "at": {"type": "number"}, "why": _STR}),
}


# -- one line ---------------------------------------------------------------------------------------
def event(time: int, process: str, type: str, **fields) -> dict:
    """An event as a dict, its common fields first (the order every line is written in)."""
    return {TIME: time, PROCESS: process, TYPE: type, **fields}


def encode_event(e: dict) -> bytes:
    """One history line without its newline: compact JSON, fields in the order given (as
    ``json.dumps(e, separators=(",", ":"))`` would write them, but UTF-8 instead of ``\\u``
    escapes). A value ``orjson`` refuses (an integer beyond 64 bits, say) falls back to
    ``json.dumps``."""
    try:
        return orjson.dumps(e, option=orjson.OPT_NON_STR_KEYS)
    except TypeError:   # orjson.JSONEncodeError: let the standard encoder try (or raise)
        return json.dumps(e, separators=(",", ":")).encode()


def encode_merged(e: dict) -> str:
    """A line of the merged ``history.jsonl`` without its newline (the standard encoder, compact)."""
    return json.dumps(e, separators=(",", ":"))


def token(name: str, value) -> bytes:
    """The bytes ``"name":value`` as ``encode_event`` writes them inside a line: what a quick scan
    of raw history bytes looks for (``token(TYPE, OK)`` is ``b'"type":"ok"'``)."""
    return orjson.dumps({name: value})[1:-1]


def parse_event(line: bytes) -> dict:
    """The event on one line; ``ValueError`` saying why when it is none (not JSON, not an object,
    no integer ``time`` or no string ``type``). Other fields are not checked: a reader takes
    what it knows and a later writer may add more."""
    try:
        e = orjson.loads(line)
    except json.JSONDecodeError as err:   # orjson's error is one
        raise ValueError(f"invalid JSON: {err.msg} at column {err.colno}") from None
    except UnicodeDecodeError as err:
        raise ValueError(f"not UTF-8: {err.reason}") from None
    if not isinstance(e, dict):
        raise ValueError("not a JSON object")
    t = e.get(TIME)
    if not isinstance(t, int) or isinstance(t, bool):
        raise ValueError(f"'time' must be integer nanoseconds, got {t!r}")
    if not isinstance(e.get(TYPE), str):
        raise ValueError(f"'type' must be a string, got {e.get(TYPE)!r}")
    return e


# -- the schema ---------------------------------------------------------------------------------
SCHEMA_ID = "https://github.com/leasecheck/leasecheck/docs/schemas/history-event.schema.json"


def event_schema() -> dict:
    """The JSON Schema of one history line (``docs/schemas/history-event.schema.json``): the
    common fields, then each known type's fields. A type not listed is allowed (a later writer's
    event; the checker skips what it does not know), and so are extra fields."""
    rules = []
    for name, ev in EVENTS.items():
        then = {"required": sorted(ev.required), "properties": {**ev.required, **ev.optional}}
        rules.append({"if": {"properties": {TYPE: {"const": name}}, "required": [TYPE]},
                      "then": {"description": ev.meaning, **then}})
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": SCHEMA_ID,
        "title": "leasecheck history event",
        "description": "One line of history.jsonl or history.d/*.jsonl (docs/history.md).",
        "type": "object",
        "required": [TIME, PROCESS, TYPE],
        "properties": {
            TIME: {"type": "integer", "description": "nanoseconds since the run's start (CLOCK_MONOTONIC)"},
            PROCESS: {"type": "string", "description": "harness, nemesis, w3 (worker 3), w3.s1 (its slot 1)"},
            TYPE: {"type": "string", "description": "the event type; known: " + ", ".join(EVENTS)},
            INDEX: {"type": "integer", "minimum": 0, "description": "0-based position (merged file)"},
        },
        "allOf": rules,
    }
