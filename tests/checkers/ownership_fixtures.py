"""The hand-written run directories of the ownership rules (tests/checkers/data/counter-zero-release-bad,
getdel-writeback-bad, hash-field-cas-ok, hash-field-hdel-bad), each line placed by hand and its
foreign releases counted by hand in tests/checkers/test_ownership.py. Rewrite them with

    python tests/checkers/ownership_fixtures.py tests/checkers/data
"""
import json, sys
from pathlib import Path

BASE = 1795951565.0
ACQ = "local v = redis.call('get', KEYS[1])\nif v and v ~= '0' then return 0 end\nredis.call('set', KEYS[1], '1', 'PX', ARGV[1])\nreturn 1"
HACQ = "if redis.call('hsetnx', KEYS[1], ARGV[1], ARGV[2]) == 1 then\n  redis.call('hpexpire', KEYS[1], ARGV[3], 'FIELDS', 1, ARGV[1])\n  return 1\nend\nreturn 0"
HREL = "if redis.call('hget', KEYS[1], ARGV[1]) == ARGV[2] then\n  return redis.call('hdel', KEYS[1], ARGV[1])\nend\nreturn 0"


def q(a):
    return '"' + a.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


class Run:
    def __init__(self, name, lease, workers, key="lc:t1:job:0"):
        self.name, self.lease, self.workers, self.key = name, lease, workers, key
        self.h, self.a, self.seq = [], [], {}
        self.config = {"key_prefix": "lc:t1:", "ttl_ms": 1000, "lease": lease, "max_overlap": None,
                       "scenario": name, "workers": workers, "slots": 1, "jobs": 1, "seed": 7, "time_limit_s": 3}
        self.h.append((0.0, {"process": "harness", "type": "run_start", "config": self.config}))
        for w in range(workers):
            self.a.append((0.005, 50000 + 100 * w, ["ECHO", f"leasecheck:conn:w{w}.s0.c0"]))

    def call(self, w, attempt, f, t0, t1, cmds, result, ok_type="ok"):
        """cmds: list of (t, argv, [lua argv lists]) ; result: value"""
        proc, conn = f"w{w}.s0", f"w{w}.s0.c0"
        self.h.append((t0, {"process": proc, "type": "invoke", "f": f, "attempt": attempt, "key": self.key}))
        sent = []
        for t, argv, lua, *reply in cmds:
            s = self.seq.get(conn, 0)
            self.seq[conn] = s + 1
            entry = [conn, s, argv[0].upper()] + reply
            sent.append(entry)
            self.a.append((t, 50000 + 100 * w, argv))
            for i, l in enumerate(lua):
                self.a.append((t + 0.00001 * (i + 1), "lua", l))
        typ = ok_type if result is not False or f != "acquire" else "fail"
        self.h.append((t1, {"process": proc, "type": typ, "f": f, "attempt": attempt, "key": self.key,
                            "value": result, "sent": sent}))

    def job(self, w, attempt, t0, t1):
        proc = f"w{w}.s0"
        self.h.append((t0, {"process": proc, "type": "job_start", "attempt": attempt, "key": self.key}))
        self.h.append((t1, {"process": proc, "type": "job_end", "attempt": attempt, "key": self.key}))

    def write(self, root, end):
        d = Path(root) / self.name
        d.mkdir(parents=True, exist_ok=True)
        self.h.append((end, {"process": "harness", "type": "run_end", "reason": "time-limit"}))
        hist = sorted(self.h, key=lambda x: x[0])
        with open(d / "history.jsonl", "w") as f:
            for i, (t, e) in enumerate(hist):
                f.write(json.dumps({"time": round(t * 1e9)} | e | {"index": i}) + "\n")
        lines = ["OK"]
        for t, addr, argv in sorted(self.a, key=lambda x: x[0]):
            where = "lua" if addr == "lua" else f"127.0.0.1:{addr}"
            lines.append(f"{BASE + t:.6f} [0 {where}] " + " ".join(q(x) for x in argv))
        lines.append(f"{BASE + end + 0.03:.6f} [0 127.0.0.1:40000] \"ECHO\" \"leasecheck:audit-end\"")
        lines.append("# end")
        (d / "audit.log").write_text("\n".join(lines) + "\n")
        (d / "config.json").write_text(json.dumps(self.config, indent=1) + "\n")
        (d / "store-clock.jsonl").write_text("".join(
            json.dumps({"time": i * 1000000000, "rtt_ns": 180000, "store_us": int((BASE + i) * 1e6)}) + "\n"
            for i in range(4)))


def counter(root):
    r = Run("counter-zero-release-bad", "counter-zero", 4)
    K = r.key
    def acq(w, att, t, won):
        lua = [["get", K]] + ([["set", K, "1", "PX", "1000"]] if won else [])
        r.call(w, att, "acquire", t - 0.001, t + 0.001, [(t, ["EVAL", ACQ, "1", K, "1000"], lua)], won)
    def rel(w, att, t):
        r.call(w, att, "release", t - 0.001, t + 0.001, [(t, ["SET", K, "0"], [])], True)
    acq(0, "w0.s0.0", 0.011, True); r.job(0, "w0.s0.0", 0.013, 1.45)       # A: its claim expires at 1.011
    acq(1, "w1.s0.0", 1.05, True); r.job(1, "w1.s0.0", 1.053, 1.30)        # B: a short job, a slow release
    rel(0, "w0.s0.0", 1.50)                                                  # A's SET 0 ends B's live claim (job over)
    acq(2, "w2.s0.0", 1.60, True); r.job(2, "w2.s0.0", 1.603, 2.40)        # C claims over A's "0"
    rel(1, "w1.s0.0", 1.90)                                                  # B's SET 0 ends C's claim, C still working
    acq(3, "w3.s0.0", 2.00, True); r.job(3, "w3.s0.0", 2.003, 2.30)        # D walks in over B's "0"
    rel(3, "w3.s0.0", 2.35)                                                  # D sets its own claim back to "0"
    rel(2, "w2.s0.0", 2.50)                                                  # C writes "0" over "0": nobody's claim
    r.write(root, 2.6)


def getdel(root):
    r = Run("getdel-writeback-bad", "getdel-writeback", 4)
    K = r.key
    def acq(w, att, t, tok, won):
        r.call(w, att, "acquire", t - 0.001, t + 0.001, [(t, ["SET", K, tok, "NX", "PX", "1000"], [], int(won))], won)
    acq(0, "w0.s0.0", 0.011, "tokA", True); r.job(0, "w0.s0.0", 0.013, 1.45)
    acq(1, "w1.s0.0", 1.05, "tokB", True); r.job(1, "w1.s0.0", 1.053, 1.80)
    # A's release: GETDEL takes B's live claim, then A writes B's value back
    r.call(0, "w0.s0.0", "release", 1.499, 1.503, [(1.50, ["GETDEL", K], []), (1.501, ["SET", K, "tokB", "PX", "1000"], [])], False)
    acq(2, "w2.s0.0", 1.60, "tokC", False)                                 # the written-back value turns C away
    # B's release: GETDEL finds its own token (the written-back copy): nobody's claim removed
    r.call(1, "w1.s0.0", "release", 1.849, 1.851, [(1.85, ["GETDEL", K], [])], True)
    acq(3, "w3.s0.0", 2.00, "tokD", True); r.job(3, "w3.s0.0", 2.003, 2.20)
    r.call(3, "w3.s0.0", "release", 2.249, 2.251, [(2.25, ["GETDEL", K], [])], True)
    r.write(root, 2.6)


def hashfield(root, safe):
    r = Run("hash-field-" + ("cas-ok" if safe else "hdel-bad"), "hash-field-" + ("cas" if safe else "hdel"), 3)
    H, K = "lc:t1:leases", r.key
    def acq(w, att, t, tok, won):
        lua = [["hsetnx", H, K, tok]] + ([["hpexpire", H, "1000", "FIELDS", "1", K]] if won else [])
        r.call(w, att, "acquire", t - 0.001, t + 0.001, [(t, ["EVAL", HACQ, "1", H, K, tok, "1000"], lua)], won)
    def rel(w, att, t, tok, mine):
        if safe:
            lua = [["hget", H, K]] + ([["hdel", H, K]] if mine else [])
            r.call(w, att, "release", t - 0.001, t + 0.001, [(t, ["EVAL", HREL, "1", H, K, tok], lua)], mine)
        else:
            r.call(w, att, "release", t - 0.001, t + 0.001, [(t, ["HDEL", H, K], [])], True)
    acq(0, "w0.s0.0", 0.011, "tokA", True); r.job(0, "w0.s0.0", 0.013, 1.45)
    # another job's field in the same hash: its claim is an object of its own
    r.call(2, "w2.s0.0", "acquire", 0.019, 0.021, [(0.02, ["HSETNX", H, "lc:t1:job:1", "tokZ"], [])], True)
    acq(1, "w1.s0.0", 1.05, "tokB", True); r.job(1, "w1.s0.0", 1.053, 1.90)
    rel(0, "w0.s0.0", 1.50, "tokA", False)
    acq(2, "w2.s0.1", 1.60, "tokC", safe is False); 
    if not safe:
        r.job(2, "w2.s0.1", 1.603, 1.80)
    rel(1, "w1.s0.0", 1.95, "tokB", safe)
    r.write(root, 2.6)


if __name__ == "__main__":
    root = sys.argv[1]
    counter(root); getdel(root); hashfield(root, True); hashfield(root, False)
