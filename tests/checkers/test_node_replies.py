"""A create at a claim's expiry on one node of several, decided by that node's own reply.

Under ``--topology redlock`` a call's one result says nothing about each node, so on each node
every call's result is unknown. A ``SET ... NX`` that runs 0.88 ms after a claim's expiry by the
audit's timestamps may still find the key there (Redis judges expiry by a clock it read a moment
later); by the clock alone the checker took it as a create, and the next holder's release of its
own claim became a "foreign release" of that phantom claim. The reply each SET got, recorded in
its ``sent`` entry (``[conn, seq, "SET", 0|1]``), settles it per node. Built after a real run
(w2's claim expired on node1 at +0.88 ms before w1's SET; w1's compare-and-delete then found
another value there)."""
from leasecheck.checkers import check
from leasecheck.checkers.read.audit import AuditStream
from leasecheck.checkers.model.nodes import measure_nodes

MS = 1_000_000
KEY = "lc:r1:job:0"
NODES = ("node1", "node2", "node3")
CONFIG = {"key_prefix": "lc:r1:", "ttl_ms": 1000, "lease": "redlock", "topology": "redlock", "nodes": 3,
          "store_nodes": [{"name": n, "port": 7000 + i, "client_port": None} for i, n in enumerate(NODES)]}
BASE = 1795951565.0   # every store's clock at history time 0
SHA = "52cd5cf149e5c13344471122831b2d86b654ce56"
# Store times (s after BASE) of each attempt's SET on node1..3. A's claims expire at 1.101,
# 1.102, 1.103; B's SETs run 0.88, 0.9, 0.95 ms after those (the store still had A's key), C's
# ~4 ms after (it had not).
A_SET, B_SET, C_SET = (0.101, 0.102, 0.103), (1.10188, 1.1029, 1.10395), (1.105, 1.106, 1.107)


def _sent(slot: str, names: list[str], replies: list[int] | None) -> list[list]:
    """One connection per node; command `i` of `names` on every node, SETs with their reply."""
    out = []
    for k, node in enumerate(NODES):
        for seq, name in enumerate(names):
            entry = [f"{slot}.c{k}@{node}", seq, name]
            if name == "SET" and replies is not None:
                entry.append(replies[k])
            out.append(entry)
    return out


def _call(slot, attempt, f, t0_ms, t1_ms, value, sent):
    base = {"process": slot, "f": f, "attempt": attempt, "key": KEY}
    done = "ok" if value or f != "acquire" else "fail"
    return [dict(base, time=round(t0_ms * MS), type="invoke"),
            dict(base, time=round(t1_ms * MS), type=done, value=value, sent=sent)]


def _history(with_replies: bool) -> list[dict]:
    r = (lambda *x: list(x)) if with_replies else (lambda *x: None)
    ev = [{"time": 0, "process": "harness", "type": "run_start", "config": CONFIG}]
    ev += _call("a.s0", "a.s0.0", "acquire", 100, 104, True, _sent("a.s0", ["SET"], r(1, 1, 1)))
    # B loses everywhere and clears its (absent) claims with the lease's compare-and-delete.
    ev += _call("b.s0", "b.s0.0", "acquire", 1101, 1104.5, False, _sent("b.s0", ["SET", "EVALSHA"], r(0, 0, 0)))
    ev += _call("c.s0", "c.s0.0", "acquire", 1104.8, 1108, True, _sent("c.s0", ["SET"], r(1, 1, 1)))
    ev += _call("c.s0", "c.s0.0", "release", 1500, 1504, True, [[f"c.s0.c{k}@{n}", 1, "EVALSHA"]
                                                               for k, n in enumerate(NODES)])
    for i, e in enumerate(ev):
        e["index"] = i
    return ev


def _nodes() -> dict:
    def line(t, addr, cmd):
        return f"{BASE + t:.6f} [0 {addr}] {cmd}\n"

    out = {}
    for k, node in enumerate(NODES):
        lines = []
        for slot, port, t, tok in (("a.s0", 5001, A_SET[k], "tokA"), ("b.s0", 5002, B_SET[k], "tokB"),
                                   ("c.s0", 5003, C_SET[k], "tokC")):
            addr = f"127.0.0.1:{port}"
            lines.append((t - 0.0005, line(t - 0.0005, addr, f'"ECHO" "leasecheck:conn:{slot}.c{k}@{node}"')))
            lines.append((t, line(t, addr, f'"SET" "{KEY}" "{tok}" "NX" "PX" "1000"')))
        cad = f'"EVALSHA" "{SHA}" "1" "{KEY}"'
        t = B_SET[k] + 0.0003          # B's compare-and-delete finds another value: no del
        lines.append((t, line(t, "127.0.0.1:5002", f'{cad} "tokB"') + line(t, "lua", f'"get" "{KEY}"')))
        t = 1.5 + k * 0.001            # C releases its own claim
        lines.append((t, line(t, "127.0.0.1:5003", f'{cad} "tokC"') + line(t, "lua", f'"get" "{KEY}"')
                      + line(t, "lua", f'"del" "{KEY}"')))
        text = "OK\n" + "".join(text for _, text in sorted(lines))
        text += f'{BASE + 2:.6f} [0 127.0.0.1:1] "ECHO" "leasecheck:audit-end"\n# end\n'
        samples = [{"time": 0, "store_us": round(BASE * 1e6)}, {"time": 2000 * MS, "store_us": round((BASE + 2) * 1e6)}]
        out[node] = (AuditStream(text=text), samples)
    return out


def _fates(with_replies: bool) -> dict:
    return {m.name: ([(c.owner, c.fate) for c in m.claims], m.model.edges, m.disagreements)
            for m in measure_nodes(_history(with_replies), _nodes(), CONFIG)}


def test_with_each_sets_reply_the_run_is_valid_and_the_edge_is_decided_by_the_reply():
    r = check(_history(with_replies=True), None, CONFIG, nodes=_nodes())
    assert r["valid"] is True, r["reasons"]
    assert r["foreign_releases"] == 0 and r["disagreements"] == [] and r["problems"] == []
    for node, (claims, edges, disagreements) in _fates(True).items():
        assert claims == [("a.s0.0", "expired_after_job"), ("c.s0.0", "released_by_holder")], node
        [edge] = edges
        assert "ms from the expiry of a.s0.0's claim: its reply says it was present" in edge
        assert disagreements == []


def test_without_the_replies_the_store_clock_decides_and_the_holders_release_looks_foreign():
    """A history without replies (written before they were recorded) still gets what it got:
    the clock says A's claims were gone, so B's SETs created claims and C's release of its own
    removed B's — a false INVALID the checker cannot avoid without the replies."""
    r = check(_history(with_replies=False), None, CONFIG, nodes=_nodes())
    assert r["valid"] is False and r["foreign_releases"] == 3
    for node, (claims, edges, _) in _fates(False).items():
        assert claims == [("a.s0.0", "expired_after_job"), ("b.s0.0", "foreign_release")], node
        assert "the store clock says it was gone" in edges[0]


def test_a_reply_the_audit_contradicts_is_a_disagreement_of_its_node():
    """A's SET on node2 answered 0 (not written) though the key was absent: no expiry is near, so
    the audit wins and the contradiction is reported."""
    ev = _history(with_replies=True)
    done = next(e for e in ev if e.get("attempt") == "a.s0.0" and e["type"] == "ok")
    done["sent"] = [s[:3] + [0] if s[0].endswith("@node2") else s for s in done["sent"]]
    r = check(ev, None, CONFIG, nodes=_nodes())
    [d] = r["disagreements"]
    assert d.startswith("node2: audit.log:") and "was answered 0 (not written), but the audit shows a claim created" in d
    assert r["foreign_releases"] == 0      # listed, as the cross-check's disagreements are


def test_a_malformed_reply_is_a_problem():
    ev = _history(with_replies=True)
    done = next(e for e in ev if e.get("attempt") == "a.s0.0" and e["type"] == "ok")
    done["sent"] = [s[:3] + ["OK"] if s[0].endswith("@node2") else s for s in done["sent"]]
    r = check(ev, None, CONFIG, nodes=_nodes())
    assert any("node2: a.s0.0 acquire: malformed sent entry" in p for p in r["problems"]), r["problems"]
