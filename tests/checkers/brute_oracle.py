"""A brute-force oracle: replay a run's files step by step, independently of `checkers`.

It reads only what a run writes (history events, the audit text, the store-clock samples) and
shares no code with `checkers` (nor with the reference model): its own line parser, its own
attribution by `sent` and connection markers, its own store in integer microseconds (a key is
gone once now > expiry; a script's commands run at its EVAL's time). For small, truthful runs
it is the specification the checker's claim fates and foreign releases must agree with.
"""
from __future__ import annotations

import re
from collections import Counter

_LINE = re.compile(r'^(\d+)\.(\d{6}) \[(\d+) (\S+)\] (.*)$')
_ARG = re.compile(r'"((?:[^"\\]|\\.)*)"')
_ESC = {"n": "\n", "r": "\r", "t": "\t", '"': '"', "\\": "\\"}


def _unquote(s: str) -> str:
    return re.sub(r'\\(x[0-9a-fA-F]{2}|.)', lambda m: chr(int(m[1][1:], 16)) if len(m[1]) == 3 else _ESC[m[1]], s)


def oracle(events: list[dict], audit_text: str, samples: list[dict], prefix: str):
    """Returns (fates: Counter[(owner, key, fate)], foreign: Counter[(remover, victim, key, how)])."""
    by_sent = {(c, q): e["attempt"] for e in events if e.get("sent") for c, q, _ in e["sent"]}
    jobs = {}
    for e in events:
        if e["type"] == "job_start":
            jobs[e["attempt"]] = [e["time"], None]
        elif e["type"] == "job_end":
            jobs[e["attempt"]][1] = e["time"]
    offset_us = samples[0]["store_us"] - samples[0]["time"] // 1000
    conns, store, claims, foreign = {}, {}, [], Counter()   # addr -> [conn, seq]; key -> claim
    who, t_script, end = None, 0, 0

    def live(key, t):
        c = store.get(key)
        if c is not None and t > c["expiry"]:
            del store[key]
            return None
        return c

    def end_by(c, attempt, how):
        if c["fate"] is None:
            c["fate"] = "released_by_holder" if attempt == c["owner"] else "foreign_release"
            if attempt != c["owner"]:
                foreign[(attempt, c["owner"], c["key"], how)] += 1

    for raw in audit_text.splitlines():
        m = _LINE.match(raw)
        if not m:
            continue
        t = int(m[1]) * 1_000_000 + int(m[2])
        addr, args = m[4], [_unquote(a) for a in _ARG.findall(m[5])]
        name = args[0].upper()
        if addr != "lua":
            end, t_script = t, t
            if name == "ECHO" and args[1].startswith("leasecheck:conn:"):
                conns[addr] = [args[1][len("leasecheck:conn:"):], 0]
                continue
            conn = conns.get(addr)
            who = by_sent.get((conn[0], conn[1])) if conn else None
            if conn:
                conn[1] += 1
        else:
            t = t_script
        key = args[1] if len(args) > 1 else ""
        if not key.startswith(prefix):
            continue
        cur = live(key, t)
        if name == "SET":
            opts = [a.upper() for a in args[3:]]
            if "NX" in opts and cur is not None:
                continue
            if cur is not None:
                end_by(cur, who, "overwritten")
            px = int(opts[opts.index("PX") + 1])
            store[key] = {"owner": who, "key": key, "expiry": t + px * 1000, "fate": None}
            claims.append(store[key])
        elif name == "DEL" and cur is not None:
            end_by(cur, who, "deleted")
            del store[key]
        elif name == "PEXPIRE" and cur is not None:
            new = t + int(args[2]) * 1000
            if who != cur["owner"] and new < cur["expiry"]:
                end_by(cur, who, "expiry shortened")
            cur["expiry"] = new
    for c in claims:
        if c["fate"] is None:
            if c["expiry"] < end:
                job = jobs.get(c["owner"])
                at_ns = (c["expiry"] - offset_us) * 1000
                held = job is not None and (job[1] is None or at_ns < job[1])
                c["fate"] = "expired_while_held" if held else "expired_after_job"
            else:
                c["fate"] = "still_held"
    return Counter((c["owner"], c["key"], c["fate"]) for c in claims), foreign
