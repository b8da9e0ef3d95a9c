"""A lease that opens a new connection for every command: redis-py's handshake (`HELLO 3`) comes
before each connection's marker, and client ports are reused within the run, so a new
connection's HELLO comes from an address still bound to an earlier connection. The join gives it
to the new connection (docs/history.md, "Attribution: `sent`"): no disagreement, and
`audit.unattributed` counts only the harness's own lines."""
import re
from collections import Counter
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration

LEASE = str(Path(__file__).with_name("reconnecting_lease.py")) + ":ReconnectingLease"
LINE = re.compile(r"\S+ \[\d+ (\S+)\] \"(\w+)\"(?: \"(.*?)\")?")


def test_a_handshake_on_a_reused_client_port_is_no_disagreement(leasecheck):
    r = leasecheck("run", "--lease", LEASE, "--time-limit", "8s", "--job-duration", "5ms..20ms")
    assert r.code == 0, r.out + r.err
    res = r.results
    markers, lines, hellos = Counter(), Counter(), 0
    end_markers = 0
    for text in (r.run_dir / "audit.log").read_text().splitlines():
        m = LINE.match(text)
        if not m or m.group(1) == "lua":
            continue
        addr, name, arg = m.groups()
        lines[addr] += 1
        hellos += name == "HELLO"
        if name == "ECHO" and arg and arg.startswith("leasecheck:conn:"):
            markers[addr] += 1
        end_markers += name == "ECHO" and arg == "leasecheck:audit-end"
    reused = [a for a, n in markers.items() if n > 1]
    assert len(reused) >= 10, "no client port was reused: the test shows nothing"
    assert hellos >= sum(markers.values())           # the store lists each connection's HELLO
    assert res["disagreements"] == []
    assert res["audit"]["complete"] is True
    # the harness's own connections (no worker marker: its marked admin connection with its clock,
    # and the audit's end marker, which is
    # not counted) and nothing else: no lease connection's handshake is unattributed
    own = sum(n for a, n in lines.items() if a not in markers) - end_markers
    assert res["audit"]["unattributed"] == own
    assert res["valid"] is True and res["claims_seen"]["count"] > 0 and res["problems"] == []
