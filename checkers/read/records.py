"""Typed records for the history's common lines, decoded straight from JSON (msgspec).

Most of a long history is lease calls (``invoke``, ``ok``, ``fail`` of ``acquire``, ``release``,
``renew``, ``effect``: the name decoded as the constant of `leasecheck.events` itself) and job events (``job_start``, ``job_end``, ``effect``). The checker's pass
(`HistoryStream.records`) decodes such a line into one of the records below instead of a dict:
only the fields the checker reads, with their types checked by the decoder, no dict to build and
free, and the event's type told by its class (`kind`, the constant of `leasecheck.events`). A line
the records do not fit — any other type, a field of another type (``time`` not an integer, ``f``
not a string), a job event that names a call (``f``), damage — is read as a dict as before, so
what the checker concludes is the same either way (tests compare the two readings).

A record answers `get(name, default)`, `name in record` and `record[name]` as the event's dict
would for the fields it keeps, and ``"type"``; a field the line does not have is `UNSET` (JSON's
null is None), and the fields a record does not keep are absent. A completion's ``sent`` entries
are tuples — ``(conn, seq, name)``, or ``(conn, seq, name, reply)`` where the reply of a SET was
recorded — where the dict has lists; a line with an entry that is not an array is read as a dict.
"""
from __future__ import annotations

from typing import Any, ClassVar, Literal, Optional, Union

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

    def get(self, name: str, default: Any = None) -> Any:
        if name == TYPE:
            return self.kind
        value = getattr(self, name) if name in self.__struct_fields__ else UNSET
        return default if value is UNSET else value

    def __contains__(self, name: object) -> bool:
        return name == TYPE or (name in self.__struct_fields__ and getattr(self, str(name)) is not UNSET)

    def __getitem__(self, name: str) -> Any:
        value = self.get(name, UNSET)
        if value is UNSET:
            raise KeyError(name)
        return value


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


class _Head(msgspec.Struct, gc=False):
    """What merging the per-process files needs of a line (`history.write_merged`): its `time`
    and `type` (as a reader requires them) and whether it has an `index` already; decoding it
    checks the whole line is JSON and skips the other fields without building them."""
    time: int
    type: str
    index: Union[int, msgspec.UnsetType] = UNSET


decode_head = msgspec.json.Decoder(_Head).decode
