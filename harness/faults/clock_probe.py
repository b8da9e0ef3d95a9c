"""How far a clock is from the real one, measured while a clock fault acts: the store's ``TIME``
over the admin connection, or a worker's own ``time.time()`` — the clock its lease code reads —
asked down its stdin and answered on its stdout (``leasecheck.harness.run.replies``). Each result comes with the
probe's round trip: the true skew lies within half of it."""
from __future__ import annotations

import secrets
import time


def store_skew(admin) -> tuple[float | None, float | None]:
    """(the store's ``TIME`` minus the real wall clock, the probe's round trip), in seconds; the
    true skew lies within half the round trip of the first number. (None, None) when the store
    does not answer."""
    try:
        time.sleep(0.01)
        before = time.time()
        secs, micros = admin.time()
        after = time.time()
        return round(secs + micros / 1e6 - (before + after) / 2, 4), round(after - before, 4)
    except Exception:
        return None, None


def worker_skews(ctx, names: list[str], timeout_s: float = 1.0) -> dict[str, list]:
    """``ctx``: the fault's ``FaultContext`` (its ``workers`` and ``replies``).
    ``{"w3": [skew_s, rtt_s] or [None, None]}``: each worker's own wall clock, as its lease code
    sees it, minus the real one. The question goes down the worker's stdin and the answer comes
    back on its stdout (``leasecheck.harness.run.replies``); a stopped worker does not answer in time."""
    asked = {}
    for name in names:
        token = f"{name}.{secrets.token_hex(4)}"
        sent = time.time_ns()
        try:
            ctx.workers[int(name[1:])].stdin.write(f"clock {token}\n".encode())
        except (OSError, ValueError, AttributeError):
            continue
        asked[token] = (name, sent)
    got = ctx.replies.wait(list(asked), timeout_s) if ctx.replies is not None and asked else {}
    out = {name: [None, None] for name in names}
    for token, (name, sent) in asked.items():
        if token in got:
            wall, received = got[token]
            out[name] = [round((wall - (sent + received) / 2) / 1e9, 4), round((received - sent) / 1e9, 4)]
    return out
