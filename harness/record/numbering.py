"""What an audited connection does for every command it sends and every reply it reads, compiled
with the hot modules (setup.py): the numbering of a connection's commands, the reply of a
conditional create, and the slot's ``SendTracker`` they go to. ``leasecheck.harness.record.connection``
says what the numbers mean and holds the redis-py ``Connection`` that calls this; the wire path
(``leasecheck.harness.record.wire``) names commands with the same ``_name``.
"""
from __future__ import annotations

import contextvars
import threading
import types
from typing import Any, Callable, Final

try:    # built with the compiled modules (setup.py); used only by them (``_new_lock``)
    from leasecheck import _linewrite
except ImportError:
    _linewrite = None

from redis.exceptions import ResponseError

from leasecheck.protocol import UNNUMBERED

# Commands MONITOR never shows (administrative or explicitly hidden in some Redis version): not
# numbered (by the join neither).
HIDDEN: Final = UNNUMBERED

_CREATES: Final = frozenset({"SET", "SETNX"})   # their reply says whether the key was written
# A conditional create's reply -> 1 (written) or 0 (not): RESP2/RESP3 simple string, nil, integer.
_WROTE: Final[dict] = {b"OK": 1, "OK": 1, None: 0, 1: 1, 0: 0, True: 1, False: 0}
_REPLY_TYPES: Final = (bytes, str, type(None), int, bool)


class Call:
    """One lease call in flight (``SendTracker.begin``): what a late command is credited to."""

    def __init__(self, attempt: str, f: str, key: str, invoked: int, open: bool = True) -> None:
        self.attempt = attempt
        self.f = f
        self.key = key
        self.invoked = invoked    # its invocation's history time: names the call among the attempt's
        self.open = open

    def __repr__(self) -> str:
        return f"Call({self.attempt!r}, {self.f!r}, {self.key!r}, {self.invoked!r}, open={self.open!r})"


# The call the current thread's commands belong to: set by ``begin`` in the slot's thread, and
# seen by any thread that runs in a copy of that thread's context.
_CALL: Final[contextvars.ContextVar[Call | None]] = contextvars.ContextVar("leasecheck_call", default=None)
# its get and set, bound once: compiled, a call of either is then a plain call, without a look-up of
# the method by name each time (about 150 instructions per call, bench/RESULTS.md, "fifteenth session")
_get_call: Final[Callable[[], Call | None]] = _CALL.get
_set_call: Final[Callable[[Call | None], Any]] = _CALL.set


class SendTracker:
    """Per-slot record of commands sent, drained into each history op's ``sent`` field."""

    def __init__(self, process: str, on_late: Callable[[Call, list], None] | None = None) -> None:
        self.process = process
        self.on_late = on_late     # (call, entry) for a command sent after its call returned
        self.on_sent: Callable[[], None] | None = None   # each command sent (the slot board's count)
        self._lock: Any = _new_lock()
        # the lock's own methods, bound once (a ``with`` looks ``__enter__`` and ``__exit__`` up and
        # calls ``__exit__`` with three arguments, for every command and every drain)
        self._take: Callable[[], Any] = self._lock.acquire
        self._give: Callable[[], Any] = self._lock.release
        self._conn_count = 0
        self._pending: list[list] = []

    def new_conn_id(self, node: str | None = None) -> str:
        """``w0.s0.c3``, or ``w0.s0.c3@node2`` for a connection to one node among several."""
        with self._lock:
            cid = f"{self.process}.c{self._conn_count}" + (f"@{node}" if node else "")
            self._conn_count += 1
            return cid

    def begin(self, attempt: str, f: str, key: str, invoked: int) -> Call:
        """A lease call starts in this thread: commands sent in its context belong to it."""
        call = Call(attempt, f, key, invoked)
        _set_call(call)
        return call

    def add(self, entry: list) -> None:
        call = _get_call()
        on_late = self.on_late
        late = call is not None and not call.open and on_late is not None
        if not late:
            self._take()
            try:
                self._pending.append(entry)
            finally:
                self._give()
        on_sent = self.on_sent
        if on_sent is not None:
            on_sent()
        if late and call is not None and on_late is not None:
            on_late(call, list(entry))   # as sent: its reply, read later, is not added

    def idle(self) -> bool:
        """Nothing sent since the last drain, and no call of this thread open: a drain now would
        return nothing and change nothing (read without the lock: a command added meanwhile is
        drained with the next call, as one added just after a drain is)."""
        return not self._pending and _get_call() is None

    def drain(self) -> list[list]:
        """The commands sent since the last drain; closes the call this thread began (a command
        sent in its context from now on is late)."""
        call = _get_call()
        self._take()
        try:
            if call is not None:
                call.open = False
            out, self._pending = self._pending, []
        finally:
            self._give()
        if call is not None:
            _set_call(None)
        return out


def _new_lock() -> Any:
    """The tracker's lock, taken for every command and every drain: compiled (and built, setup.py),
    ``leasecheck._linewrite.Lock``, which takes and gives without parsing arguments as
    ``threading.Lock``'s methods do (about 1,000 instructions per store operation fewer,
    bench/RESULTS.md); run as Python, a ``threading.Lock``."""
    if isinstance(_new_lock, types.FunctionType) or _linewrite is None:     # interpreted, or not built
        return threading.Lock()
    return _linewrite.Lock()


def _has_get(args: Any) -> bool:
    """SET ... GET replies with the old value, not with whether it wrote."""
    # (typed a tuple, what redis-py sends, its arguments are read without a generic index each)
    return _tuple_has_get(args if type(args) is tuple else tuple(args))


def _tuple_has_get(args: tuple) -> bool:
    for i in range(3, len(args)):
        a = args[i]
        if (type(a) is str or type(a) is bytes) and len(a) == 3 and a.upper() in ("GET", b"GET"):
            return True
    return False


_NAMES: Final[dict] = {}   # first argument -> command name: a lookup per command instead of a parse


def _name(args: Any) -> str:
    first = args[0]
    cacheable = type(first) is str or type(first) is bytes
    name = _NAMES.get(first) if cacheable else None
    if name is None:
        text = first.decode("utf-8", "replace") if isinstance(first, bytes) else str(first)
        name = text.split(" ", 1)[0].upper()
        if cacheable and len(_NAMES) < 1024:
            _NAMES[first] = name
    return name


class Numbering:
    """The commands of one announced connection (``conn``, its marker's name), numbered from 0 in
    the order sent, each entry ``[conn, number or None, name]`` handed to the slot's tracker; then,
    reply by reply, what a conditional create's reply says (a 4th element) and the renumbering
    when the store refused a command before running it."""

    def __init__(self, tracker: SendTracker, conn: str) -> None:
        self.tracker = tracker
        self.conn = conn
        self.seq = 0
        self.last: list | None = None         # the entry of the command whose reply comes next
        self.packed: list = []                # a pipeline's entries, in the order of their replies
        self.noreply: list = []               # SET ... GET: its reply is the old value

    def number(self, args: Any) -> list:
        name = _name(args)
        if name in HIDDEN:
            entry: list = [self.conn, None, name]
        else:
            entry = [self.conn, self.seq, name]
            self.seq += 1
            if name == "SET" and len(args) > 3 and _has_get(args):
                self.noreply.append(entry)
        self.last = entry
        self.tracker.add(entry)
        return entry

    def pack(self, commands: list) -> None:
        """A pipeline's or a transaction's commands, packed for one send; their replies are read
        one by one, in order. In a pipeline a refused command takes no number (as alone). In a
        transaction nothing is renumbered: a command refused while queued aborts the EXEC, and the
        checker then knows that none of the queued commands ran."""
        packed = [self.number(args) for args in commands]
        txn = bool(commands) and _name(commands[0]) == "MULTI"
        self.packed = [] if txn else packed
        self.last = None

    def take(self) -> list | None:
        """The entry whose reply is read next."""
        packed = self.packed
        return packed.pop(0) if packed else self.last

    def refused(self, entry: list) -> None:
        """The store refused ``entry``'s command before running it: it is not in the audit, so it
        takes no number, and the commands numbered after it on this connection move down by one."""
        if entry[1] is None:
            return
        for later in self.packed:
            if later is not None and later[1] is not None:
                later[1] -= 1
        entry[1] = None
        self.seq -= 1

    def replied(self, entry: list | None, reply: Any) -> None:
        if entry is None or len(entry) != 3 or entry[2] not in _CREATES:
            return
        noreply = self.noreply
        if noreply and any(e is entry for e in noreply):
            noreply[:] = [e for e in noreply if e is not entry]
            return
        wrote = _WROTE.get(reply) if type(reply) in _REPLY_TYPES else None
        if wrote is not None:
            entry.append(wrote)


class Sender:
    """An audited connection's ``send_command``, set on the connection itself (an instance
    attribute, ``leasecheck.harness.record.connection.AuditedConnection``), so that redis-py's call
    of ``connection.send_command(...)`` reaches compiled code instead of an interpreted override
    and its ``super()``: connect first when not connected (the connection announces itself
    before the command is numbered), number the command, then ``send``, the method the
    connection's class has (redis-py's, or a subclass's before it: Sentinel's), bound to it."""

    def __init__(self, conn: Any, send: Callable) -> None:
        self.conn = conn
        self.send = send

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        conn = self.conn
        if conn._sock is None:   # redis-py's ``is_connected``, without a property's frame
            conn.connect()
        # None during the handshake (before the marker): not numbered. (Typed, so the call below
        # is a native one, not through the method's Python wrapper.)
        lc: Numbering | None = conn._lc
        if lc is not None:
            lc.number(args)
        return self.send(*args, **kwargs)


class Reader:
    """An audited connection's ``read_response``, set on the connection as ``Sender`` is: the
    entry whose reply comes next is taken before ``read`` (the class's method, bound), and the
    reply goes to the connection's numbering — a conditional create's says whether it wrote; a
    refusal (``rejected(error)``) renumbers."""

    def __init__(self, conn: Any, read: Callable, rejected: Callable[[ResponseError], bool]) -> None:
        self.conn = conn
        self.read = read
        self.rejected = rejected

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        conn = self.conn
        lc: Numbering | None = conn._lc
        entry = lc.take() if lc is not None else None
        try:
            reply = self.read(*args, **kwargs)
        except ResponseError as e:
            if entry is not None and lc is not None and conn._lc is lc and self.rejected(e):
                lc.refused(entry)
            raise
        if lc is not None:
            lc.replied(entry, reply)
        return reply
