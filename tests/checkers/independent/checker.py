"""An independent checker, written from docs/history.md alone ("Claims and their owners: the
counting rules", "Attribution: `sent`", "Audit", "Timing rules"). It imports nothing of
leasecheck: it reads a run directory's files itself and returns

    {"foreign": [(remover, victim, audit line, victim_job_running), ...], "claims": n,
     "fates": {fate: n, ...}, "objects": n, "overlap": n, "found_nothing": n}

It models what the document says and no more (no transactions that did not run, a gap forgets
everything), which covers the saved run directories of the tests and plain runs. A run of several
nodes ("Mutual exclusion across masters", "Claims lost in failover", "Split brain") is checked by
`nodes.py`, which runs this checker once per node (`Checker(run, node=...)`).
"""
from __future__ import annotations

import json
import re
from pathlib import Path

UNNUMBERED = {"HELLO", "AUTH", "CLIENT", "CONFIG", "DEBUG", "MONITOR", "ACL", "SLOWLOG", "LATENCY",
              "MODULE", "CLUSTER", "SHUTDOWN", "SAVE", "BGSAVE", "BGREWRITEAOF", "LASTSAVE",
              "SYNC", "PSYNC", "REPLCONF", "REPLICAOF", "SLAVEOF", "FAILOVER", "MIGRATE", "RESTORE-ASKING"}
SCRIPTS = {"EVAL", "EVALSHA", "EVAL_RO", "EVALSHA_RO", "FCALL", "FCALL_RO"}
EDGE_MS = 2.0
TRUST_MS = 250.0   # (more in a run that stepped the store's clock: none of the tests')
PLAIN_WRITES = {"SET", "SETEX", "PSETEX", "GETSET", "HSET", "HMSET"}   # ("SET" here: without NX or XX)
LINE = re.compile(r"(\d+\.\d+) \[(\d+) ([^ ]+)\] (.*)")
ARG = re.compile(r'"((?:[^"\\]|\\.)*)"')
ESC = {"n": "\n", "r": "\r", "t": "\t", "a": "\a", "b": "\b", '"': '"', "\\": "\\"}


def _unquote(s: str) -> str:
    out, i = [], 0
    while i < len(s):
        ch = s[i]
        if ch == "\\" and i + 1 < len(s):
            nxt = s[i + 1]
            if nxt == "x":
                out.append(chr(int(s[i + 2:i + 4], 16)))
                i += 4
                continue
            out.append(ESC.get(nxt, nxt))
            i += 2
            continue
        out.append(ch)
        i += 1
    return "".join(out)


def _history(run: Path) -> list[dict]:
    if (run / "history.jsonl").exists():
        lines = (run / "history.jsonl").read_text().splitlines()
        return [json.loads(x) for x in lines if x.strip()]
    events = []
    for f in sorted((run / "history.d").glob("*.jsonl")):
        for n, x in enumerate(f.read_text().splitlines()):
            if x.strip():
                try:
                    events.append((json.loads(x), f.name, n))
                except ValueError:
                    pass     # a torn last line
    events.sort(key=lambda e: (e[0]["time"], e[1], e[2]))
    return [e for e, _, _ in events]


class Clock:
    """Store seconds -> history ns, from the sample nearest in store time; a sample whose round
    trip took more than 250 ms is left out when there are others."""

    def __init__(self, run: Path, name: str = "store-clock.jsonl"):
        path = run / name
        samples = [json.loads(x) for x in path.read_text().splitlines() if x.strip()] if path.exists() else []
        self.samples = [x for x in samples if (x.get("rtt_ns") or 0) <= 250_000_000] or samples

    def to_ns(self, store_s: float) -> float:
        if not self.samples:
            return 0.0
        s = min(self.samples, key=lambda x: abs(x["store_us"] / 1e6 - store_s))
        return s["time"] + (store_s * 1e9 - s["store_us"] * 1000)


EVICT = re.compile(r"leasecheck:fault:\d+:evict:(start|end)$")


class Entry:
    def __init__(self, obj, owner, expires, claim: dict | None, evictable=False):
        self.obj, self.owner, self.expires, self.claim = obj, owner, expires, claim   # claim None: nobody's
        self.evictable = evictable
        self.doubt = 0.0    # ms its expiry may be later ("When a command ran": the slack of the line that set it)


UNKNOWN = Entry(None, None, None, None)    # an object whose state is lost


class Checker:
    """One store, or node `node` of a run of several ("Attribution: `sent`", last paragraph): its
    audit joined with the `sent` entries of that node alone, every call's outcome unknown there
    except, with `one_endpoint` (a replicated run), a call whose every command went to that node.
    Lines from `replicated_from` (a replica's primary) store *copies*, whose owner `copy_owner`
    names ("Claims lost in failover")."""

    def __init__(self, run: Path, node: str | None = None, one_endpoint: bool = False,
                 replicated_from: frozenset = frozenset(), copy_owner=None, events=None):
        self.config = json.loads((run / "config.json").read_text())
        self.prefix = self.config.get("key_prefix", "")
        self.events = events if events is not None else _history(run)
        self.node, self.replicated_from, self.copy_owner = node, replicated_from, copy_owner
        self.audit_name = f"audit-{node}.log" if node else "audit.log"
        self.clock = Clock(run, f"store-clock-{node}.jsonl" if node else "store-clock.jsonl")
        self.sent, self.calls, self.jobs, self.pending = {}, [], {}, {}
        opened = {}
        last = {}        # (slot, attempt) -> its last completed call (a late_sent is credited to it)

        def here(entry) -> bool:
            return node is None or str(entry[0]).endswith(f"@{node}")
        for i, e in enumerate(self.events):
            t = e.get("type")
            if t == "invoke":
                opened[(e["process"], e["attempt"], e["f"])] = {"f": e["f"], "attempt": e["attempt"],
                                                                "type": None, "value": None, "slot": e["process"]}
            elif t in ("ok", "fail", "info"):
                call = opened.pop((e["process"], e["attempt"], e["f"]), None) or {"f": e["f"], "attempt": e["attempt"]}
                sent = [x for x in e.get("sent") or [] if isinstance(x, list) and x]
                mine = [x for x in sent if here(x)]
                keeps = node is None or (one_endpoint and mine and len(mine) == len(sent))
                call.update(type=t if keeps or t == "info" else "info", value=e.get("value") if keeps else None,
                            sent=sent)
                self.calls.append(call)
                for entry in mine:
                    if entry[1] is not None:
                        self.sent[(entry[0], entry[1])] = (call, entry[3] if len(entry) > 3 else None)
            elif t == "late_sent":
                # a call of its own whose outcome is unknown, of the same attempt (and `f`)
                call = {"f": e["f"], "attempt": e["attempt"], "type": None, "value": None, "late": True}
                for entry in e.get("sent") or []:
                    if isinstance(entry, list) and entry and here(entry) and entry[1] is not None:
                        self.sent[(entry[0], entry[1])] = (call, None)
            elif t == "job_start":
                self.jobs[e["attempt"]] = [e["key"], e["time"], None]
            elif t == "job_end" and e["attempt"] in self.jobs:
                self.jobs[e["attempt"]][2] = e["time"]
        for call in opened.values():
            self.pending.setdefault(call["slot"], []).append(call)
        self.end_ns = self.events[-1]["time"] if self.events else 0
        self.objects: dict = {}         # (db, obj) -> Entry
        self.hash_exp: dict = {}        # (db, key) -> ms
        self.field_own: dict = {}       # (db, key, field) -> ms
        self.fields: dict = {}          # (db, key) -> set of fields
        self.followed: set = set()
        self.claims: list[dict] = []
        self.value = None               # the value the command in hand writes
        self.addr = None                # the address of the audit line in hand (its EVAL's for a script line)
        self.foreign: list[tuple] = []
        self.foreign_at: list[float] = []   # each one's history time (ns)
        self.ended: set = set()
        self.evicting = False
        self.last_t = 0.0
        self.slack = 0.0     # the current line's slack, ms ("When a command ran")
        self.max_seq: dict = {}
        for (conn, seq) in self.sent:
            self.max_seq[conn] = max(self.max_seq.get(conn, -1), seq)

    # -- the audit ------------------------------------------------------------------------
    def run(self, run: Path) -> dict:
        bound, seqs, script = {}, {}, (None, None, 0.0, 0.0)
        self.complete = False
        raws = (run / self.audit_name).read_text().splitlines()
        times = [float(m.group(1)) if m else None for m in map(LINE.match, raws)]
        for n, raw in enumerate(raws, start=1):
            # "When a command ran": a command line's slack is how much later the next command line's time is
            later = times[n] if n < len(raws) and times[n] is not None and times[n - 1] is not None else None
            self.slack = (later - times[n - 1]) * 1000 if later is not None and later > times[n - 1] else 0.0
            if raw.strip() == "# end":
                self.complete = True
            if raw.startswith("# restart"):
                self._restart()
                continue
            if raw.startswith("# gap"):
                for e in self.objects.values():     # lost; what was there cannot be followed
                    if e.claim is not None and e.claim["fate"] is None:
                        if e.expires is not None and e.expires < self.last_t * 1000:
                            self._expire(e)
                        else:
                            self._seal(e.claim, "unknown", self.last_t)
                self.objects.clear()
                bound.clear()
                continue
            m = LINE.match(raw)
            if not m:
                continue
            ts, db, addr, rest = float(m.group(1)), int(m.group(2)), m.group(3), m.group(4)
            if addr != "lua":
                self.last_t = ts
                self.addr = addr
            argv = [_unquote(a) for a in ARG.findall(rest)]
            if not argv:
                continue
            name = argv[0].upper()
            if addr == "lua":
                call, reply, t, self.slack = script
                self.apply(db, argv, name, call, None, t, n)
                continue
            if name == "ECHO" and len(argv) == 2 and EVICT.match(argv[1]):
                self.evicting = EVICT.match(argv[1]).group(1) == "start"
                if self.evicting:
                    for e in self.objects.values():
                        e.evictable = True
                continue
            if name == "ECHO" and len(argv) == 2 and argv[1].startswith("leasecheck:harness:"):
                bound.pop(addr, None)       # the harness's own connection: none of a worker's
                continue
            if name == "ECHO" and len(argv) == 2 and argv[1].startswith("leasecheck:conn:"):
                bound[addr] = argv[1][len("leasecheck:conn:"):]
                seqs[bound[addr]] = 0
                continue
            call = reply = None
            conn = bound.get(addr)
            if conn is not None and name not in UNNUMBERED:
                seq = seqs[conn]
                seqs[conn] = seq + 1
                got = self.sent.get((conn, seq))
                if got is not None:
                    call, reply = got
                else:
                    slot = conn.rsplit(".", 1)[0]
                    open_calls = self.pending.get(slot, [])
                    if len(open_calls) == 1 and self.max_seq.get(conn, -1) < seq:
                        call = open_calls[0]
            script = (call, reply, ts, self.slack)
            self.apply(db, argv, name, call, reply, ts, n)
        return self.result()

    def _restart(self):
        for e in self.objects.values():
            if e.claim is not None and e.claim["fate"] is None:
                if e.expires is not None and e.expires < self.last_t * 1000:
                    self._expire(e)
                else:
                    self._seal(e.claim, "lost_in_restart", self.last_t)
        self.evicting = False
        self.objects.clear()
        self.fields.clear()
        self.hash_exp.clear()
        self.field_own.clear()

    # -- following and expiry -------------------------------------------------------------
    def follows(self, db, key, call) -> bool:
        if key.startswith(self.prefix) or (db, key) in self.followed:
            return True
        if call is not None and call["f"] in ("acquire", "release", "renew"):
            self.followed.add((db, key))
            return True
        return False

    def live(self, db, obj, call, reply, t_ms, name):
        e = self.objects.get((db, obj))
        if e is None or e is UNKNOWN:
            return e
        if e.expires is None:
            return self._evicted(db, obj, e, call, reply, name)
        d = t_ms - e.expires
        gone = d > 0
        near = -TRUST_MS - self.slack <= d <= TRUST_MS + e.doubt
        said = self._client_says_present(e, call, reply, name) if near else None
        if e.evictable and said is False and d < -EDGE_MS - self.slack:
            return self._evicted(db, obj, e, call, reply, name)
        if said is not None and (abs(d) <= EDGE_MS or said == gone):
            gone = not said     # at the edge the client decides; further out, a contradiction wins
        if gone:
            if e.claim is not None and e.claim["fate"] is None:
                self._expire(e)
            del self.objects[(db, obj)]
            return None
        return self._evicted(db, obj, e, call, reply, name)

    def _expire(self, e):
        """Its expiry passed: while held when its attempt's job had not ended by then."""
        job = self.jobs.get(e.claim["owner"]) if e.claim["owner"] else None
        at = self.clock.to_ns(e.expires / 1000)
        held = job is not None and (job[2] is None or at < job[2])
        self._seal(e.claim, "expired_while_held" if held else "expired_after_job", e.expires / 1000)

    def _evicted(self, db, obj, e, call, reply, name):
        """An object live in an eviction window, which a client's result proves absent: evicted."""
        if e.evictable and self._client_says_present(e, call, reply, name) is False:
            if e.claim is not None and e.claim["fate"] is None:
                self._seal(e.claim, "evicted", self.last_t)
            del self.objects[(db, obj)]
            return None
        return e

    def _client_says_present(self, e, call, reply, name):
        conditional = name in ("SETNX", "HSETNX") or name == "SET-NX"
        if reply is not None and conditional:
            return not reply
        if call is None or call.get("type") not in ("ok", "fail"):
            return None
        ok = call["type"] == "ok" and call.get("value") is not False
        if call["f"] == "acquire" and conditional:
            return not ok
        if call["f"] in ("release", "renew") and e.owner == call["attempt"] and name not in PLAIN_WRITES:
            return ok
        if call["f"] == "release" and name == "DEL-1" and \
                sum(1 for s in call.get("sent") or [] if s[2] in ("DEL", "UNLINK")) == 1:
            return ok   # a release deleting by name (its only DEL): whoever's claim it removed
        return None

    # -- claims ---------------------------------------------------------------------------
    def _seal(self, claim, fate, t=None):
        claim["fate"], claim["ended"] = fate, t
        if claim["owner"] is not None:
            self.ended.add((claim["owner"], claim["db"], claim["obj"]))

    def _frees(self, call, db, obj) -> bool:
        if call is None or call["f"] == "acquire":
            return False
        return call["f"] == "release" or (call["attempt"], db, obj) in self.ended

    def _end(self, e: Entry, call, t, line, db):
        """A command removed, overwrote or shortened what `e` holds."""
        claim = e.claim
        if claim is None or claim["fate"] is not None:
            return
        if call is None or claim["owner"] is None:
            self._seal(claim, "unknown", t)
        elif call["attempt"] == claim["owner"]:
            self._seal(claim, "released_by_holder", t)
        elif e.evictable and not (call["f"] in ("release", "renew") and call.get("type") == "ok"
                                  and call.get("value") is True):
            # it may have been evicted already: only a release or renewal answering true proves
            # the command removed it; one that answered otherwise shows the eviction
            known = call["f"] in ("release", "renew") and call.get("type") in ("ok", "fail")
            self._seal(claim, "evicted" if known else "unknown", t)
        else:
            job = self.jobs.get(claim["owner"])
            at = self.clock.to_ns(t)
            running = job is not None and job[1] <= at and (job[2] is None or at < job[2])
            self.foreign.append((call["attempt"], claim["owner"], line, running))
            self.foreign_at.append(at)
            self._seal(claim, "foreign_release", t)

    def write(self, db, obj, call, reply, t, line, name, nx=False, xx=False, expires=None, keepttl=False):
        t_ms = t * 1000
        kind = "SET-NX" if nx and name == "SET" else "SET-XX" if xx and name == "SET" else name
        cur = self.live(db, obj, call, reply, t_ms, kind)
        if cur is UNKNOWN:
            if nx and self._create_seen(call, reply):
                cur = None
            elif nx or xx:
                return False
            else:
                cur = None
        elif nx and cur is not None and cur.evictable and self._result_unknown(call, reply):
            # an eviction may have removed it: then this create happened; nobody's result says
            if cur.claim is not None and cur.claim["fate"] is None:
                self._seal(cur.claim, "unknown", t)
            self.objects[(db, obj)] = UNKNOWN
            return False
        if (nx and cur is not None) or (xx and cur is None):
            return False
        attempt = call["attempt"] if call is not None else None
        if cur is not None:
            if keepttl:
                expires = cur.expires
            if cur.claim is not None and cur.owner == attempt and attempt is not None and not self._frees(call, db, obj):
                cur.expires = expires
                if not keepttl:
                    cur.doubt = self.slack
                return True
            self._end(cur, call, t, line, db)
        doubt = cur.doubt if keepttl and cur is not None else self.slack
        if self._frees(call, db, obj):
            self.objects[(db, obj)] = Entry(obj, None, expires, None, self.evicting)
            self.objects[(db, obj)].doubt = doubt
            return True
        copy = call is None and self.addr in self.replicated_from
        token = self.value
        if copy and self.copy_owner is not None and token is not None:
            attempt = self.copy_owner(db, obj, token, self.clock.to_ns(t))
        claim = {"owner": attempt, "db": db, "obj": obj, "fate": None, "created": t, "ended": None,
                 "token": token, "copy": copy, "acquire": call is not None and call["f"] == "acquire"}
        self.claims.append(claim)
        self.objects[(db, obj)] = Entry(obj, attempt, expires, claim, self.evicting)
        self.objects[(db, obj)].doubt = doubt
        return True

    @staticmethod
    def _create_seen(call, reply) -> bool:
        if reply is not None:
            return bool(reply)
        return bool(call is not None and call["f"] == "acquire" and call.get("type") == "ok" and call.get("value"))

    @staticmethod
    def _result_unknown(call, reply) -> bool:
        return reply is None and (call is None or call.get("type") not in ("ok", "fail"))

    def remove(self, db, obj, call, reply, t, line, name):
        cur = self.live(db, obj, call, reply, t * 1000, name)
        if cur is UNKNOWN:
            del self.objects[(db, obj)]
        elif cur is not None:
            self._end(cur, call, t, line, db)
            del self.objects[(db, obj)]

    def set_expiry(self, db, obj, new, call, reply, t, line, name):
        cur = self.live(db, obj, call, reply, t * 1000, name)
        if cur is None or cur is UNKNOWN:
            return
        if new is not None and new <= t * 1000:
            self.remove(db, obj, call, reply, t, line, name)
            return
        old, cur.expires = cur.expires, new
        cur.doubt = self.slack
        attempt = call["attempt"] if call is not None else None
        if cur.claim is not None and attempt != cur.owner and new is not None and (old is None or new < old - 0.0005):
            self._end(cur, call, t, line, db)

    # -- hashes ---------------------------------------------------------------------------
    def _hash_fields(self, db, key, call, reply, t, name):
        fs = self.fields.get((db, key), set())
        for f in list(fs):
            if self.live(db, (key, f), call, reply, t * 1000, name) is None:
                fs.discard(f)
        if not fs:
            self.fields.pop((db, key), None)
            self.hash_exp.pop((db, key), None)
        return fs

    def _field_expiry(self, db, key, f):
        own, whole = self.field_own.get((db, key, f)), self.hash_exp.get((db, key))
        return whole if own is None else own if whole is None else min(own, whole)

    def _rexpire(self, db, key, f, call, reply, t, line, name):
        self.set_expiry(db, (key, f), self._field_expiry(db, key, f), call, reply, t, line, name)

    # -- commands -------------------------------------------------------------------------
    def apply(self, db, argv, name, call, reply, t, line):
        # the value a write stores (a copy's owner is found by it): SET's and the like's, a field's
        self.value = argv[3] if name in ("SETEX", "PSETEX") and len(argv) > 3 else \
            argv[2] if len(argv) > 2 and name in ("SET", "SETNX", "GETSET") else \
            argv[3] if len(argv) > 3 and name in ("HSET", "HMSET", "HSETNX") else None
        if name == "FLUSHDB" or name == "FLUSHALL":
            for (d, obj) in list(self.objects):
                if name == "FLUSHALL" or d == db:
                    self.remove(d, obj, call, reply, t, line, name)
            self.fields = {k: v for k, v in self.fields.items() if name != "FLUSHALL" and k[0] != db}
            return
        if len(argv) < 2:
            return
        key = argv[1]
        keys = argv[1:] if name in ("DEL", "UNLINK") else [key]
        keys = [k for k in keys if self.follows(db, k, call)]
        if not keys:
            return
        t_ms = t * 1000
        if name in ("DEL", "UNLINK", "GETDEL"):
            for k in keys:
                if (db, k) in self.fields:
                    if name == "GETDEL":
                        continue
                    for f in list(self._hash_fields(db, k, call, reply, t, name)):
                        self.remove(db, (k, f), call, reply, t, line, name)
                        self.field_own.pop((db, k, f), None)
                    self.fields.pop((db, k), None)
                    self.hash_exp.pop((db, k), None)
                else:   # a delete of one key by its name ("DEL-1"): its success found it present
                    self.remove(db, k, call, reply, t, line, "DEL-1" if name != "GETDEL" and len(argv) == 2 else name)
        elif name == "SET":
            opts, expires, i = set(), None, 3
            while i < len(argv):
                a = argv[i].upper()
                if a in ("EX", "PX", "EXAT", "PXAT"):
                    v = int(argv[i + 1])
                    expires = {"EX": t_ms + v * 1000, "PX": t_ms + v, "EXAT": v * 1000, "PXAT": v}[a]
                    i += 2
                    continue
                opts.add(a)
                i += 1
            if (db, key) in self.fields and self._hash_fields(db, key, call, reply, t, name):
                if "NX" in opts:
                    return
                for f in list(self.fields[(db, key)]):
                    self.remove(db, (key, f), call, reply, t, line, name)
                self.fields.pop((db, key), None)
                self.hash_exp.pop((db, key), None)
                opts.discard("XX")
            self.write(db, key, call, reply, t, line, name, nx="NX" in opts, xx="XX" in opts,
                       expires=expires, keepttl="KEEPTTL" in opts)
        elif name == "SETNX":
            self.write(db, key, call, reply, t, line, name, nx=True)
        elif name == "GETSET":
            self.write(db, key, call, reply, t, line, name)
        elif name in ("SETEX", "PSETEX"):
            self.write(db, key, call, reply, t, line, name,
                       expires=t_ms + int(argv[2]) * (1000 if name == "SETEX" else 1))
        elif name in ("EXPIRE", "PEXPIRE", "EXPIREAT", "PEXPIREAT", "PERSIST"):
            if name == "PERSIST":
                new, flag = None, ""
            else:
                v = int(argv[2]) * (1000 if name in ("EXPIRE", "EXPIREAT") else 1)
                new = v if name.endswith("AT") else t_ms + v
                flag = argv[3].upper() if len(argv) > 3 else ""
            if (db, key) in self.fields:
                if not self._hash_fields(db, key, call, reply, t, name):
                    return
                old = self.hash_exp.get((db, key))
                if not self._flag_ok(flag, old, new):
                    return
                if new is not None and new <= t_ms:
                    self.apply(db, ["DEL", key], "DEL", call, reply, t, line)
                    return
                if new is None:
                    self.hash_exp.pop((db, key), None)
                else:
                    self.hash_exp[(db, key)] = new
                for f in list(self.fields[(db, key)]):
                    self._rexpire(db, key, f, call, reply, t, line, name)
                return
            cur = self.live(db, key, call, reply, t_ms, name)
            if cur is not None and cur is not UNKNOWN and self._flag_ok(flag, cur.expires, new):
                self.set_expiry(db, key, new, call, reply, t, line, name)
        elif name in ("HSET", "HMSET", "HSETNX"):
            pairs = argv[2:]
            for j in range(0, len(pairs) - 1, 2):
                f = pairs[j]
                if (db, key) not in self.fields and self.live(db, key, call, reply, t_ms, name) is not None:
                    return      # a string there
                fs = self._hash_fields(db, key, call, reply, t, name)
                if name == "HSETNX" and f in fs:
                    continue
                self.field_own.pop((db, key, f), None)
                if self.write(db, (key, f), call, reply, t, line, name, nx=name == "HSETNX",
                              expires=self._field_expiry(db, key, f)):
                    self.fields.setdefault((db, key), set()).add(f)
        elif name in ("HDEL", "HGETDEL"):
            fs_named = argv[2:] if name == "HDEL" else argv[4:]
            for f in fs_named:
                self._hash_fields(db, key, call, reply, t, name)
                self.remove(db, (key, f), call, reply, t, line, name)
                self.field_own.pop((db, key, f), None)
                if (db, key) in self.fields:
                    self.fields[(db, key)].discard(f)
                    if not self.fields[(db, key)]:
                        self.fields.pop((db, key))
                        self.hash_exp.pop((db, key), None)
        elif name in ("HPEXPIRE", "HEXPIRE", "HPEXPIREAT", "HEXPIREAT", "HPERSIST"):
            if name == "HPERSIST":
                new, flag, named = None, "", argv[4:]
            else:
                v = int(argv[2]) * (1000 if name in ("HEXPIRE", "HEXPIREAT") else 1)
                new = v if name.endswith("AT") else t_ms + v
                flag = argv[3].upper() if argv[3].upper() in ("NX", "XX", "GT", "LT") else ""
                named = argv[(6 if flag else 5):]
            fs = self._hash_fields(db, key, call, reply, t, name)
            for f in named:
                if f not in fs or not self._flag_ok(flag, self.field_own.get((db, key, f)), new):
                    continue
                if new is not None and new <= t_ms:
                    self.apply(db, ["HDEL", key, f], "HDEL", call, reply, t, line)
                    continue
                if new is None:
                    self.field_own.pop((db, key, f), None)
                else:
                    self.field_own[(db, key, f)] = new
                self._rexpire(db, key, f, call, reply, t, line, name)

    @staticmethod
    def _flag_ok(flag, old, new) -> bool:
        return not ((flag == "NX" and old is not None) or (flag == "XX" and old is None)
                    or (flag == "GT" and (old is None or new is None or new <= old))
                    or (flag == "LT" and old is not None and (new is None or new >= old)))

    # -- the counts -----------------------------------------------------------------------
    def result(self) -> dict:
        for e in self.objects.values():     # the end of the audit
            if e is not UNKNOWN and e.claim is not None and e.claim["fate"] is None:
                if e.expires is not None and e.expires < self.last_t * 1000:
                    self._expire(e)
                else:
                    self._seal(e.claim, "still_held")
        fates: dict = {}
        for c in self.claims:
            fates[c["fate"]] = fates.get(c["fate"], 0) + 1
        return {"foreign": self.foreign, "claims": len(self.claims), "fates": fates,
                "objects": len({(c["db"], c["obj"]) for c in self.claims}),
                "overlap": self.overlap(), "found_nothing": self.found_nothing()}

    def overlap(self) -> int:
        """From the history alone: per job key, the runs that started while another was running."""
        by_key: dict = {}
        for key, start, end in self.jobs.values():
            by_key.setdefault(key, []).append((start, end if end is not None else self.end_ns))
        overlap = 0
        for spans in by_key.values():
            spans.sort()
            for i, (start, _) in enumerate(spans):
                overlap += any(s <= start < e for s, e in spans[:i])
        return overlap

    def found_nothing(self) -> int:
        """From the history alone (a node's view makes every call's outcome unknown: call it on
        a checker of the whole history)."""
        return sum(c["f"] == "release" and c.get("type") == "ok" and c.get("value") is False for c in self.calls)


def check(run_dir) -> dict:
    run = Path(run_dir)
    config = json.loads((run / "config.json").read_text())
    if config.get("store_nodes"):
        from .nodes import check_nodes
        return check_nodes(run)
    return Checker(run).run(run)
