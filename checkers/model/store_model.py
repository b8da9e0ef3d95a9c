"""A model of the store's keys: how Redis commands change them, and when a key's expiry has passed.

Only Redis semantics live here — SET and its options (NX, XX, EX/PX/EXAT/PXAT, KEEPTTL, and
Valkey 8.1's IFEQ: write only while the key holds the given value), SETNX,
GETSET, SETEX, DEL/UNLINK/GETDEL, the EXPIRE family with NX/XX/GT/LT, PERSIST, GETEX, FLUSHDB and
FLUSHALL, the fields of a hash (HSET/HMSET, HSETNX, HDEL, HGETDEL and field expiry — HPEXPIRE,
HEXPIRE, HPEXPIREAT, HEXPIREAT with NX/XX/GT/LT, HPERSIST — where the server has them; a hash
key's own expiry, DEL and overwrite reach every field), a script's commands at the time of its `EVAL` line (Redis freezes the clock for a
script), a gap in the audit (every key's state lost), a restart (every key gone), an eviction
window (any key may vanish silently). The model knows nothing of attempts, calls or claims: it
holds per `(db, key)` an *entry* (made by its `events`; it needs `expires_ms`, store ms or None,
`evictable`, `doubt_ms`, and `token`: the value a SET stored, None when not known), None (absent) or `UNKNOWN` (state lost), and every question whose answer
depends on who sent a command is asked of `events` (the claims layer, `claims.Claims`):

- `create(key, c, expires_ms) -> entry` / `written(key, c, old, expires_ms) -> entry`: a write
  stored a value in an absent / a present key (the entry returned is what the key holds now);
- `removed(entry, c, how)`, `expiry_changed(entry, c, old_ms, new_ms)`: a command removed the key
  or changed its expiry; `touched_unknown(c)`: a command met a key whose state is lost;
- `expired(entry, c)`, `evicted(entry, c)`: the key was found gone at `c`; `vanished(entry, why,
  t)` / `expired_before(entry)`: a gap, a restart or the end of the audit caught it live / already
  expired (`why` is "gap", "restart" or "end");
- `client_view(entry, c)`: what the result the client got for `c` says about the key being
  present (None: nothing) — within `trust_ms` of an expiry it decides, see `claims`; `edge(...)`
  reports such a close call; `create_seen(c)`, `result_unknown(c)`, `undecidable(entry, c)`:
  the same for a conditional create on a key whose state is lost or may have been evicted.

A command `c` is a `Command`: its line's fields (`argv`, `name`, `db` ...), `t` (store s), `t_ms`,
`slack_ms` (how much later than `t_ms` it may have run: `AuditRecord.slack_ms`) and `where`. An entry's `doubt_ms`
is the slack of the command that set its expiry (it may expire that much later): the two widen
`trust_ms`, on their sides, where a client's result decides.
Which keys are modelled at all is `following`'s to say (`follows(c, key)`, `known(db, key)`).

A field of a hash is an object of its own: its entry lives under `(db, (key, field))`, so every
key-level rule (expiry, the ambiguous edge, evictions, gaps) applies to it unchanged; `events`
get the tuple `(key, field)` as its key. Its expiry is the earlier of its own (field expiry) and
the hash key's (`PEXPIRE` on the hash), and it goes when either passes. The store keeps which
fields each hash key has (`hashes`), its key-level expiry and each field's own.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final

AMBIGUOUS_MS: Final = 2.0
# The MONITOR line's time and the time Redis judges expiry by are read microseconds apart — or
# further apart when the store is descheduled between the two reads, or when its clock is stepped
# (a clock fault) in between. Within this distance of an expiry, a client's result that proves
# the key present or absent beats the logged time; further out, a contradiction is a disagreement.
TRUST_CLIENT_MS: Final = 250.0


@dataclass(slots=True, init=False)
class Command:
    """One audit command as the model applies it: its line's fields, its store time, what it is
    attributed to, and the words it is reported by (``claims.Replay`` makes one per command line;
    typed, so that compiled the model reads them natively). The model needs nothing else of the
    line or the call: this module imports nothing."""
    argv: list[str]
    name: str            # the command's name, upper case
    db: int
    line: int            # the line's number in its file
    addr: str            # the client address the line names ("lua" inside a script)
    reply: int | None    # the client's reply to a SET/SETNX (1 wrote, 0 not), if known (the join's)
    t: float             # store time, s (the EVAL's for script commands)
    attempt: Any         # a str, or None when unattributed
    op: Any              # the call it is attributed to (``checkers.read.ops.Op``), or None
    label: str
    slack_ms: float      # how much later than `t` it may have run (its line's, or its EVAL line's, `slack_ms`)
    source: str          # the file the line is in (``where``)

    def __init__(self, argv: list[str], name: str, db: int, line: int, addr: str, reply: int | None, t: float,
                 attempt: Any, op: Any, label: str, slack_ms: float, source: str) -> None:
        # Written out: compiled, a dataclass's generated __init__ is interpreted Python, and the
        # model builds one of these per audit command.
        self.argv, self.name, self.db, self.line, self.addr, self.reply = argv, name, db, line, addr, reply
        self.t, self.attempt, self.op, self.label = t, attempt, op, label
        self.slack_ms, self.source = slack_ms, source

    @property
    def t_ms(self) -> float:
        return self.t * 1000.0

    @property
    def where(self) -> str:
        return f"{self.source}:{self.line}: {self.label}"


class _Unknown:
    def __repr__(self):
        return "UNKNOWN"


UNKNOWN: Final = _Unknown()  # a key whose state the model lost (after a gap)
_NONZERO: Final = frozenset("123456789")


class Store:
    """The keys, fed one command at a time in audit order (`apply`)."""

    def __init__(self, events, following, trust_ms: float = 0.0, problems: list[str] | None = None):
        self.events, self.following = events, following
        self.follows = following.follows
        self.trust_ms = max(trust_ms, AMBIGUOUS_MS)
        self.problems = problems if problems is not None else []
        self.state: dict = {}                   # (db, key) -> entry, None or UNKNOWN
        self.default: object = None             # UNKNOWN for unseen keys after a gap
        self.eviction = False                   # inside an eviction fault window
        self.hashes: dict = {}                  # (db, key) -> {field: own expiry ms or None}
        self.hash_expiry: dict = {}             # (db, key) -> the hash key's own expiry, ms

    def peek(self, db: int, key: Any):
        """The key's entry, None or UNKNOWN as last written (no expiry applied)."""
        return self.state.get((db, key), self.default)

    # -- dispatch ---------------------------------------------------------------------------
    def apply(self, c: Command) -> None:
        argv, name = c.argv, c.name
        handler = _HANDLERS.get(name)
        if handler is None:
            if name not in READ_ONLY:
                db, known = c.db, self.following.known
                ours = [a for a in argv[1:] if (self.state.get((db, a), self.default) is not None
                                                or (db, a) in self.hashes) and known(db, a)]
                if ours:
                    self.problems.append(f"{c.where}: command not modelled; claims on {ours} may be wrong")
            return
        if name in _ANY_KEY or (len(argv) > 1 and self.follows(c, argv[1])):
            try:
                handler(self, c)
            except (ValueError, IndexError) as e:
                self.problems.append(f"{c.where}: rejected by the store ({e}); no effect")

    def rejects_create(self, db: int, argv: list[str], t_ms: float, seen_present: bool = False,
                       slack_ms: float = 0.0) -> bool:
        """Is `argv` (logged at store time `t_ms`, run up to `slack_ms` later) a `SET key value
        NX PX n` that fails and changes nothing, for sure? It is when the key holds an entry that
        is live, cannot have been evicted and is far from its expiry (as `write` would find). The
        common case, short. With `seen_present` (what the client saw, `events.client_view`, says
        the key was there) "far" is more than AMBIGUOUS_MS before the expiry: `live` then keeps the
        entry, no edge."""
        if (len(argv) == 6 and argv[3] == "NX" and argv[4] == "PX" and argv[5][:1] in _NONZERO
                and argv[5].isdigit()):
            cur = self.state.get((db, argv[1]), self.default)
            if cur is None or cur is UNKNOWN or cur.evictable:
                return False
            expires: Any = cur.expires_ms     # (read once: an entry's fields are generic attributes here)
            reach = self.trust_ms + slack_ms    # (ahead by more, it is live whenever the SET ran)
            if type(expires) is float:
                # (typed, for the compiled build: native arithmetic, no new float objects)
                ms: float = expires
                ahead = ms - t_ms      # (exactly -(t_ms - ms), `live`'s distance)
                return ahead > reach or (seen_present and ahead > AMBIGUOUS_MS)
            return expires is not None and (expires - t_ms > reach
                                            or (seen_present and expires - t_ms > AMBIGUOUS_MS))
        return False

    # -- expiry -----------------------------------------------------------------------------
    def live(self, key: Any, c: Command):
        """The key's entry at `c`'s time (expiring it first if due), None, or UNKNOWN."""
        k = (c.db, key)
        cur = self.state.get(k, self.default)
        if cur is None or cur is UNKNOWN:
            return cur
        events = self.events
        if cur.expires_ms is None:
            # (the eviction fault's allkeys-random policy evicts keys without an expiry too)
            if cur.evictable and events.client_view(cur, c) is False:
                events.evicted(cur, c)
                self.state[k] = None
                return None
            return cur
        d = c.t_ms - cur.expires_ms
        gone = d > 0
        # The command ran up to its slack after `t_ms`, and the expiry may be up to the entry's
        # doubt later than `expires_ms`: the true distance is in [d - doubt, d + slack].
        present = (events.client_view(cur, c)
                   if -self.trust_ms - c.slack_ms <= d <= self.trust_ms + cur.doubt_ms else None)
        if cur.evictable and present is False and d < -AMBIGUOUS_MS - c.slack_ms:
            # found absent before its expiry while it may have been evicted: an eviction, not a
            # disagreement between the client and the store clock
            events.evicted(cur, c)
            self.state[k] = None
            return None
        if abs(d) <= AMBIGUOUS_MS or (present is not None and present == gone):
            gone = gone if present is None else not present
            events.edge(cur, c, key, d, present is not None, gone)
        if gone:
            events.expired(cur, c)
            self.state[k] = None
            return None
        if cur.evictable and events.client_view(cur, c) is False:
            events.evicted(cur, c)
            self.state[k] = None
            return None
        return cur

    # -- commands ---------------------------------------------------------------------------
    def write(self, c: Command, key: Any, nx=False, xx=False, expires=None, keepttl=False, ifeq=None) -> None:
        """SET and its relatives; ``ifeq``: write only while the key holds that value (SET ... IFEQ)."""
        if type(key) is str and (c.db, key) in self.hashes and self.fields(c, key):
            if nx or ifeq is not None:
                return          # a hash is there: NX fails, IFEQ meets the wrong type
            self.drop_hash(c, key)   # SET replaces a hash whole
            xx = False
        cur = self.live(key, c)
        events = self.events
        if ifeq is not None:
            if cur is UNKNOWN or (cur is not None and cur.token is None):
                events.touched_unknown(c)   # what the key holds is not known: nor is the outcome
                return
            if cur is None or cur.token != ifeq:
                return
        if cur is UNKNOWN:
            if nx and events.create_seen(c):
                cur = None     # the client saw its create succeed: the key was absent
            elif nx or xx:
                events.touched_unknown(c)
                return
            else:
                cur = None     # overwritten; what it held is unknown
        if nx and cur is not None and cur.evictable and events.result_unknown(c):
            # An eviction may already have removed `cur`: then this create happened, and nobody's
            # result says whether it did. The key can no longer be followed.
            events.undecidable(cur, c)
            self.state[(c.db, key)] = UNKNOWN
            return
        if (nx and cur is not None) or (xx and cur is None):
            return
        if cur is None:
            new = events.create(key, c, expires)
        else:
            new = events.written(key, c, cur, cur.expires_ms if keepttl else expires)
        if new is not cur:
            new.evictable = self.eviction
        # its expiry counts from when this command ran, unless it kept the one the key had
        new.doubt_ms = cur.doubt_ms if keepttl and cur is not None else c.slack_ms
        self.state[(c.db, key)] = new

    def delete(self, c: Command, key, how: str = "deleted") -> None:
        if (c.db, key) in self.hashes:
            self.drop_hash(c, key, how)
            return
        cur = self.live(key, c)
        if cur is UNKNOWN:
            self.events.touched_unknown(c)
        elif cur is not None:
            self.events.removed(cur, c, how)
        self.state[(c.db, key)] = None

    def set_expiry(self, c: Command, key, new: float | None, flag: str = "") -> None:
        """EXPIRE-like change to `new` (ms, None = persist), honouring NX/XX/GT/LT."""
        if (c.db, key) in self.hashes:
            self.hash_key_expiry(c, key, new, flag)
            return
        cur = self.live(key, c)
        if cur is UNKNOWN:
            self.events.touched_unknown(c)
            return
        if cur is None:
            return
        old = cur.expires_ms
        if ((flag == "NX" and old is not None) or (flag == "XX" and old is None)
                or (flag == "GT" and (old is None or new is None or new <= old))
                or (flag == "LT" and old is not None and (new is None or new >= old))):
            return
        if new is not None and new <= c.t_ms:
            self.events.removed(cur, c, "deleted (expiry set in the past)")
            self.state[(c.db, key)] = None
            return
        cur.expires_ms = new
        cur.doubt_ms = c.slack_ms
        self.events.expiry_changed(cur, c, old, new)

    # -- hashes -----------------------------------------------------------------------------
    def fields(self, c: Command, key: str) -> dict:
        """The fields of hash `key` still live at `c` (expired ones are dropped as `live` finds
        them); when none is left the hash key is gone, its own expiry with it."""
        k = (c.db, key)
        fields = self.hashes.get(k)
        if fields is None:
            return {}
        for f in list(fields):
            if self.live((key, f), c) is None:
                del fields[f]
        if not fields:
            del self.hashes[k]
            self.hash_expiry.pop(k, None)
        return fields

    def _effective(self, db: int, key: str, own: float | None) -> float | None:
        whole = self.hash_expiry.get((db, key))
        return whole if own is None else own if whole is None else min(own, whole)

    def write_field(self, c: Command, key: str, f: str, nx: bool = False) -> None:
        """HSET / HSETNX of one field. HSET over a field clears that field's own expiry (Redis
        does); the hash key's expiry stays. A string under `key` refuses it (WRONGTYPE)."""
        db = c.db
        if (db, key) not in self.hashes and self.live(key, c) not in (None, UNKNOWN):
            return
        fields = self.fields(c, key)
        if nx and f in fields and self.state.get((db, (key, f))) is not UNKNOWN:
            return          # (a field whose state is lost: `write` asks whether the create was seen)
        self.write(c, (key, f), nx=nx, expires=self._effective(db, key, None))
        if self.state.get((db, (key, f))) is not None:
            fields[f] = None
            self.hashes[(db, key)] = fields

    def delete_field(self, c: Command, key: str, f: str, how: str = "deleted") -> None:
        fields = self.fields(c, key)
        self.delete(c, (key, f), how)
        fields.pop(f, None)
        if not fields:
            self.hashes.pop((c.db, key), None)
            self.hash_expiry.pop((c.db, key), None)

    def drop_hash(self, c: Command, key: str, how: str = "deleted") -> None:
        """DEL of a hash key, or a string written over it: every field goes."""
        for f in list(self.hashes.get((c.db, key), ())):
            self.delete(c, (key, f), how)
        self.hashes.pop((c.db, key), None)
        self.hash_expiry.pop((c.db, key), None)

    def field_expiry(self, c: Command, key: str, f: str, new: float | None, flag: str = "") -> None:
        """HPEXPIRE and its relatives (`new` ms) and HPERSIST (None) on one field."""
        fields = self.fields(c, key)
        if f not in fields:
            return
        old = fields[f]
        if ((flag == "NX" and old is not None) or (flag == "XX" and old is None)
                or (flag == "GT" and (old is None or new is None or new <= old))
                or (flag == "LT" and old is not None and (new is None or new >= old))):
            return
        if new is not None and new <= c.t_ms:
            self.delete_field(c, key, f, "deleted (expiry set in the past)")
            return
        fields[f] = new
        self._reexpire(c, key, f, self._effective(c.db, key, new))

    def hash_key_expiry(self, c: Command, key: str, new: float | None, flag: str) -> None:
        """EXPIRE-like change of a hash key: every field's expiry follows (its own, if earlier)."""
        fields = self.fields(c, key)
        if not fields:
            return
        old = self.hash_expiry.get((c.db, key))
        if ((flag == "NX" and old is not None) or (flag == "XX" and old is None)
                or (flag == "GT" and (old is None or new is None or new <= old))
                or (flag == "LT" and old is not None and (new is None or new >= old))):
            return
        if new is not None and new <= c.t_ms:
            self.drop_hash(c, key, "deleted (expiry set in the past)")
            return
        if new is None:
            self.hash_expiry.pop((c.db, key), None)
        else:
            self.hash_expiry[(c.db, key)] = new
        for f, own in list(fields.items()):
            self._reexpire(c, key, f, self._effective(c.db, key, own))

    def _reexpire(self, c: Command, key: str, f: str, eff: float | None) -> None:
        cur = self.live((key, f), c)
        if cur is UNKNOWN:
            self.events.touched_unknown(c)
        elif cur is not None and cur.expires_ms != eff:
            old = cur.expires_ms
            cur.expires_ms = eff
            cur.doubt_ms = c.slack_ms
            self.events.expiry_changed(cur, c, old, eff)

    def flush(self, c: Command) -> None:
        for (db, key), cur in list(self.state.items()):
            if c.name == "FLUSHALL" or db == c.db:
                self.delete(c, key)
        for db, key in list(self.hashes):
            if c.name == "FLUSHALL" or db == c.db:
                self.hashes.pop((db, key), None)
                self.hash_expiry.pop((db, key), None)
        if c.name == "FLUSHALL":
            self.default = None

    # -- gaps, restarts, evictions, the end -------------------------------------------------
    def _every_entry(self, why: str, t: float) -> None:
        """Tell `events` about every entry still in a key at store time `t` (s)."""
        events = self.events
        for cur in self.state.values():
            if cur is not None and cur is not UNKNOWN:
                if cur.expires_ms is not None and cur.expires_ms < t * 1000:
                    events.expired_before(cur)
                else:
                    events.vanished(cur, why, t)

    def gap(self, before: float) -> None:
        """Commands are missing here: every key's state is lost."""
        self._every_entry("gap", before)
        for k in self.state:
            self.state[k] = UNKNOWN
        self.default = UNKNOWN
        self.hash_expiry.clear()

    def restart(self, before: float) -> None:
        """The store restarted empty: every key is absent."""
        self._every_entry("restart", before)
        for k in self.state:
            self.state[k] = None
        self.default = None
        self.hashes.clear()
        self.hash_expiry.clear()

    def evicting(self, on: bool) -> None:
        """An eviction window starts (every entry now in a key may vanish silently) or ends."""
        self.eviction = on
        if on:
            for cur in self.state.values():
                if cur is not None and cur is not UNKNOWN:
                    cur.evictable = True

    def finish(self, end: float) -> None:
        """The audit is over at store time `end` (s)."""
        self._every_entry("end", end)


def conditional_create(argv: list[str]) -> bool:
    """SET ... NX, SETNX or HSETNX: a write that succeeds only when the key (field) is absent."""
    name = argv[0].upper() if argv else ""
    return name in ("SETNX", "HSETNX") or (name == "SET" and any(a.upper() == "NX" for a in argv[3:]))


def unconditional_write(argv: list[str]) -> bool:
    """A write that succeeds whatever the key holds: SET without NX/XX/IFEQ, SETEX, PSETEX, GETSET,
    HSET, HMSET."""
    name = argv[0].upper() if argv else ""
    if name == "SET":
        return not any(a.upper() in ("NX", "XX", "IFEQ") for a in argv[3:])
    return name in ("SETEX", "PSETEX", "GETSET", "HSET", "HMSET")


def first_key(c: Command) -> str | None:
    """The first key a command names: a script call's first KEYS entry, else its first argument."""
    argv = c.argv
    if c.name in SCRIPTS:
        return argv[3] if len(argv) > 3 and argv[2].isdigit() and int(argv[2]) > 0 else None
    return argv[1] if len(argv) > 1 else None


def _int(s: str) -> int:
    try:
        return int(s)
    except ValueError:
        raise ValueError(f"{s!r} is not an integer") from None


def _set(store: Store, c: Command) -> None:
    argv, t = c.argv, c.t_ms
    if store.rejects_create(c.db, argv, t, False, c.slack_ms):
        return
    if len(argv) < 3:
        raise ValueError("wrong number of arguments")
    opts, i, expires, ifeq = set(), 3, None, None
    while i < len(argv):
        a = argv[i].upper()
        if a == "IFEQ":
            ifeq = argv[i + 1]
            i += 2
            continue
        if a in ("EX", "PX", "EXAT", "PXAT"):
            n = _int(argv[i + 1])
            if n <= 0:
                raise ValueError("invalid expire time")
            expires = {"EX": t + n * 1000, "PX": t + n, "EXAT": n * 1000, "PXAT": n}[a]
            i += 2
            continue
        if a not in ("NX", "XX", "GET", "KEEPTTL"):
            raise ValueError(f"unknown SET option {a}")
        opts.add(a)
        i += 1
    if {"NX", "XX"} <= opts or (ifeq is not None and opts & {"NX", "XX"}):
        raise ValueError("NX, XX and IFEQ exclude each other")
    store.write(c, argv[1], nx="NX" in opts, xx="XX" in opts, expires=expires, keepttl="KEEPTTL" in opts,
                ifeq=ifeq)


def _setex(store: Store, c: Command) -> None:
    n = _int(c.argv[2])
    if n <= 0:
        raise ValueError("invalid expire time")
    store.write(c, c.argv[1], expires=c.t_ms + n * (1000 if c.name == "SETEX" else 1))


def _expire(store: Store, c: Command) -> None:
    argv, name = c.argv, c.name
    n = _int(argv[2]) * (1000 if name in ("EXPIRE", "EXPIREAT") else 1)
    new = n if name.endswith("AT") else c.t_ms + n
    store.set_expiry(c, argv[1], new, argv[3].upper() if len(argv) > 3 else "")


def _getex(store: Store, c: Command) -> None:
    argv, t = c.argv, c.t_ms
    if len(argv) < 3 or (c.db, argv[1]) in store.hashes:
        return
    a = argv[2].upper()
    if a == "PERSIST":
        store.set_expiry(c, argv[1], None)
    else:
        n = _int(argv[3])
        store.set_expiry(c, argv[1], {"EX": t + n * 1000, "PX": t + n, "EXAT": n * 1000, "PXAT": n}[a])


def _delete(store: Store, c: Command) -> None:
    keys = c.argv[1:] if c.name in ("DEL", "UNLINK") else c.argv[1:2]
    for key in keys:
        if c.name == "GETDEL" and (c.db, key) in store.hashes:
            continue            # WRONGTYPE
        if store.follows(c, key):
            store.delete(c, key)


def _fields_arg(argv: list[str], at: int) -> list[str]:
    """`FIELDS numfields field ...` starting at argv[at] (HPEXPIRE, HGETDEL, ...)."""
    if at >= len(argv) or argv[at].upper() != "FIELDS":
        raise ValueError("FIELDS expected")
    n = _int(argv[at + 1])
    if n <= 0 or len(argv) != at + 2 + n:
        raise ValueError("wrong number of fields")
    return argv[at + 2:]


def hash_fields(c: Command) -> list[str]:
    """The fields a hash command names (HSET h f v ..., HDEL h f ..., HPEXPIRE h ms FIELDS n f ...)."""
    argv, name = c.argv, c.name
    try:
        if name in ("HSET", "HMSET"):
            return argv[2::2]
        if name in ("HSETNX", "HDEL", "HGET", "HEXISTS", "HMGET", "HSTRLEN"):
            return argv[2:3] if name in ("HSETNX", "HGET", "HEXISTS", "HSTRLEN") else argv[2:]
        if name in ("HGETDEL", "HPERSIST", "HTTL", "HPTTL"):
            return _fields_arg(argv, 2)
        if name in _FIELD_EXPIRY:
            at = 3 + (len(argv) > 3 and argv[3].upper() in ("NX", "XX", "GT", "LT"))
            return _fields_arg(argv, at)
    except ValueError:
        return []
    return []


def _hset(store: Store, c: Command) -> None:
    argv = c.argv
    if len(argv) < 4 or len(argv) % 2:
        raise ValueError("wrong number of arguments")
    for f in argv[2::2]:
        store.write_field(c, argv[1], f)


def _hsetnx(store: Store, c: Command) -> None:
    if len(c.argv) != 4:
        raise ValueError("wrong number of arguments")
    store.write_field(c, c.argv[1], c.argv[2], nx=True)


def _hdel(store: Store, c: Command) -> None:
    argv = c.argv
    fields = argv[2:] if c.name == "HDEL" else _fields_arg(argv, 2)
    if not fields:
        raise ValueError("wrong number of arguments")
    for f in fields:
        store.delete_field(c, argv[1], f)


_FIELD_EXPIRY: Final = {"HEXPIRE": (1000, False), "HPEXPIRE": (1, False), "HEXPIREAT": (1000, True),
                 "HPEXPIREAT": (1, True)}


def _hexpire(store: Store, c: Command) -> None:
    argv = c.argv
    unit, absolute = _FIELD_EXPIRY[c.name]
    n = _int(argv[2]) * unit
    flag = argv[3].upper() if len(argv) > 3 and argv[3].upper() in ("NX", "XX", "GT", "LT") else ""
    for f in _fields_arg(argv, 4 if flag else 3):
        store.field_expiry(c, argv[1], f, n if absolute else c.t_ms + n, flag)


def _hpersist(store: Store, c: Command) -> None:
    for f in _fields_arg(c.argv, 2):
        store.field_expiry(c, c.argv[1], f, None)


_HANDLERS: Final = {
    "SET": _set,
    "SETNX": lambda store, c: store.write(c, c.argv[1], nx=True),
    "GETSET": lambda store, c: store.write(c, c.argv[1]),
    "SETEX": _setex, "PSETEX": _setex,
    "DEL": _delete, "UNLINK": _delete, "GETDEL": _delete,
    "EXPIRE": _expire, "PEXPIRE": _expire, "EXPIREAT": _expire, "PEXPIREAT": _expire,
    "PERSIST": lambda store, c: store.set_expiry(c, c.argv[1], None),
    "GETEX": _getex,
    "FLUSHDB": lambda store, c: store.flush(c), "FLUSHALL": lambda store, c: store.flush(c),
    "HSET": _hset, "HMSET": _hset, "HSETNX": _hsetnx, "HDEL": _hdel, "HGETDEL": _hdel,
    "HEXPIRE": _hexpire, "HPEXPIRE": _hexpire, "HEXPIREAT": _hexpire, "HPEXPIREAT": _hexpire,
    "HPERSIST": _hpersist,
}
SCRIPTS: Final = {"EVAL", "EVALSHA", "EVAL_RO", "EVALSHA_RO", "FCALL", "FCALL_RO"}
_ANY_KEY: Final = {"DEL", "UNLINK", "FLUSHDB", "FLUSHALL"}  # handlers that find their own keys
READ_ONLY: Final = {"GET", "MGET", "EXISTS", "TTL", "PTTL", "EXPIRETIME", "PEXPIRETIME", "TYPE", "STRLEN",
             "GETRANGE", "SUBSTR", "OBJECT", "DUMP", "TOUCH", "ECHO", "WATCH", "SCAN", "KEYS",
             "EVAL", "EVALSHA", "EVAL_RO", "EVALSHA_RO", "FCALL", "FCALL_RO", "SCRIPT", "MEMORY",
             "HGET", "HMGET", "HGETALL", "HEXISTS", "HLEN", "HKEYS", "HVALS", "HSTRLEN", "HSCAN",
             "HRANDFIELD", "HTTL", "HPTTL", "HEXPIRETIME", "HPEXPIRETIME"}
