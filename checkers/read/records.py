"""Typed records for the history's common lines, and the tuple the checker's pass reads them as.

Most of a long history is lease calls (``invoke``, ``ok``, ``fail`` of ``acquire``, ``release``,
``renew``, ``effect``: the name decoded as the constant of `leasecheck.events` itself) and job
events (``job_start``, ``job_end``, ``effect``). The checker's pass (`HistoryStream.records`)
reads such a line as one tuple of its fields in fixed places (`ROW`: kind, time, index, process,
attempt, key, f, value, sent, fence, aborted) instead of a dict: only the fields the checker reads,
with their types checked by the decoder, no dict to build and free, the event's type its first
item (`kind`, the constant of `leasecheck.events`). The tuple comes from `row(decode(line))` —
the line decoded straight from JSON into one of the records below (msgspec) — or, where the
checker runs compiled and setup.py built it, from ``leasecheck._historyline.record(line)``, the
same tuple read in one pass of C (tests hold the two together). A line the records do not fit —
any other type, a field of another type (``time`` not an integer, ``f`` not a string), a job
event that names a call (``f``), damage — is read as a dict as before, so what the checker
concludes is the same either way (tests compare the two readings).

In the tuple, a field the line does not have, or the record of its type does not keep (an
invocation keeps no value, sent or fence; only a ``job_end`` keeps ``aborted``), is `UNSET` (JSON's
null is None). A completion's ``sent`` is a list of tuples — ``(conn, seq, name)``, or
``(conn, seq, name, reply)`` where the reply of a SET was recorded — where the dict has lists; a
line with an entry that is not an array is read as a dict.
"""
from __future__ import annotations

from typing import Any, ClassVar, Final, Literal, Optional, Union

import msgspec

from leasecheck.events import ACQUIRE, EFFECT, F_EFFECT, FAIL, INVOKE, JOB_END, JOB_START, OK, RELEASE, RENEW, TYPE

UNSET: Any = msgspec.UNSET      # a field the line does not have (``None`` is JSON's null)
# A call's name, decoded as the constant itself (`leasecheck.events`: compared and hashed as one
# object); a line that names another call is read as a dict.
Call = Literal[ACQUIRE, RELEASE, RENEW, F_EFFECT]  # type: ignore[valid-type]


class Record(msgspec.Struct, tag_field=TYPE, kw_only=True, gc=False):
    kind: ClassVar[str]
    call: ClassVar[bool] = False      # a lease call's event (else a job event)
    time: int
    index: Any = UNSET
    process: Any = UNSET
    attempt: Any = UNSET
    key: Any = UNSET


class Invoke(Record, tag=INVOKE, kw_only=True, gc=False):
    kind: ClassVar[str] = INVOKE
    call: ClassVar[bool] = True
    f: Call


class Completion(Record, kw_only=True, gc=False):
    call: ClassVar[bool] = True
    f: Call
    value: Any = UNSET
    # (each entry a tuple: (conn, seq, name) or, with the reply of a SET, (conn, seq, name, reply))
    sent: Union[Optional[list[tuple]], msgspec.UnsetType] = UNSET
    fence: Any = UNSET


class Ok(Completion, tag=OK, kw_only=True, gc=False):
    kind: ClassVar[str] = OK


class Fail(Completion, tag=FAIL, kw_only=True, gc=False):
    kind: ClassVar[str] = FAIL


class Job(Record, kw_only=True, gc=False):
    # A job event that names a call (any `f`, null included) does not decode: it is read as a
    # dict, which the digest treats as a call's event. (So no check per line after the decode.)
    f: msgspec.UnsetType = UNSET


class JobStart(Job, tag=JOB_START, kw_only=True, gc=False):
    kind: ClassVar[str] = JOB_START


class JobEnd(Job, tag=JOB_END, kw_only=True, gc=False):
    kind: ClassVar[str] = JOB_END
    aborted: Any = UNSET


class Effect(Job, tag=EFFECT, kw_only=True, gc=False):
    kind: ClassVar[str] = EFFECT


decode = msgspec.json.Decoder(Union[Invoke, Ok, Fail, JobStart, JobEnd, Effect]).decode

# Where each field is in a record's tuple (`row`; ``leasecheck._historyline.record`` makes the same).
KIND: Final = 0
TIME: Final = 1
INDEX: Final = 2
PROCESS: Final = 3
ATTEMPT: Final = 4
KEY: Final = 5
F: Final = 6
VALUE: Final = 7
SENT: Final = 8
FENCE: Final = 9
ABORTED: Final = 10
ROW: Final = ("kind", "time", "index", "process", "attempt", "key", "f", "value", "sent", "fence", "aborted")


def row(r: Any) -> tuple:
    """The record `r` as the tuple the checker's pass reads: each field in its place (`ROW`),
    `UNSET` where the line has none or `r`'s class keeps none."""
    if r.call:
        if r.kind == INVOKE:
            return (r.kind, r.time, r.index, r.process, r.attempt, r.key, r.f, UNSET, UNSET, UNSET, UNSET)
        return (r.kind, r.time, r.index, r.process, r.attempt, r.key, r.f, r.value, r.sent, r.fence, UNSET)
    return (r.kind, r.time, r.index, r.process, r.attempt, r.key, UNSET, UNSET, UNSET, UNSET,
            r.aborted if r.kind == JOB_END else UNSET)


class _Head(msgspec.Struct, gc=False):
    """What merging the per-process files needs of a line (`history.write_merged`): its `time`
    and `type` (as a reader requires them) and whether it has an `index` already; decoding it
    checks the whole line is JSON and skips the other fields without building them."""
    time: int
    type: str
    index: Union[int, msgspec.UnsetType] = UNSET


decode_head = msgspec.json.Decoder(_Head).decode
