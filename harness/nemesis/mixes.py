"""Named fault mixes: ``--nemesis default`` and ``--nemesis swarm``, each a schedule drawn from
the run's seed that mixes faults aimed at the lease's own calls with blind ones.

A random schedule of blind faults (``--nemesis pause:holder,latency``) plays one fault at a time
every ``--nemesis-interval``: it stalls holders past their deadlines (what a delete-by-name release
cannot survive) but almost never lands inside the one round trip between a check-then-act
release's read and its delete. These mixes do:

- ``default``: every reply on the workers' path is late for the whole run (``latency``, a tenth of
  the TTL, 10 % jitter), so a release's read has run in the store while its answer is still in
  transit (a background step: ``params.background``); and about every 1.6 TTLs one worker is
  paused for 1.2 TTLs (past its deadline), drawn with weights: a slot inside ``release()`` 4, one
  holding a claim 2, one inside ``acquire()`` 1, one inside ``renew()`` 1 (only for a lease that
  renews) and any worker 1 (a blind pause). The pauses never overlap one another; the latency overlaps them all.
- ``swarm`` (swarm testing: each seed its own small mix): per seed, a subset of those fault kinds
  (at least one), whether the replies are late and by how much (20 ms to 0.2 TTL), how long the
  pauses last (1.05 to 2 TTLs) and how far apart they are (0.3 to 3 TTLs beyond the pause). What was
  drawn is recorded in ``config.json`` (``nemesis_drawn``) and every step in ``schedule.json``, so
  the seed gives the same mix again and ``--replay`` plays it exactly.

Neither names a fault that breaks every lease's promise (a store clock jump, an eviction, a
restart, a failover): a sound lease stays VALID under both; those faults are columns of their own.
"""
from __future__ import annotations

import random

from leasecheck.harness.faults import Step

DEFAULT, SWARM = "default", "swarm"
NAMED = (DEFAULT, SWARM)
# The aimed and blind pauses a mix draws from (pause targets); the renewer only for a lease that renews.
PAUSES = ("releaser", "holder", "acquirer", "renewer", "worker")
DEFAULT_WEIGHTS = {"releaser": 4, "holder": 2, "acquirer": 1, "renewer": 1, "worker": 1}
LATENCY_TTLS = 0.1          # default: the replies' delay, in TTLs
# default: each pause, in TTLs. Past the deadline, and short enough that a releaser paused between
# its read and its delete wakes while the claim's next holder still has it: a release entered d
# into a TTL-long lease (d: the job) is woken after the claim expired (TTL - d) and before the
# next holder's claim does (about 2 TTL - d) when d < 0.8 TTL (measured: 1.5 TTLs with 0.4 s jobs
# of a 1 s lease woke just as the next claim expired, and the delete found nothing).
PAUSE_TTLS = 1.2
GAP_TTLS = 1.6              # default: from one pause's start to the next, in TTLs
END_MARGIN_S = 0.2          # every step ends this long before the time limit (healed by its own end)


def is_named(spec: str | None) -> bool:
    return (spec or "").strip() in NAMED


def pool(spec: str) -> str:
    """The faults a named mix may use, as ``--nemesis`` spells them (validated like any mix)."""
    return "latency," + ",".join(f"pause:{t}" for t in PAUSES)


def draw(spec: str, cfg, renews: bool) -> tuple[list[Step], dict]:
    """The steps of mix ``spec`` for ``cfg`` (its seed, TTL, time limit) and what was drawn."""
    rng = random.Random(f"{cfg.seed}:nemesis:{spec}")
    targets = [t for t in PAUSES if renews or t != "renewer"]
    if spec == DEFAULT:
        drawn = {"mix": DEFAULT, "pauses": {t: DEFAULT_WEIGHTS[t] for t in targets},
                 "latency_ms": round(LATENCY_TTLS * cfg.ttl_s * 1000), "pause_ttls": PAUSE_TTLS,
                 "gap_ttls": GAP_TTLS}
    else:
        chosen = [t for t in targets if rng.random() < 0.5] or [rng.choice(targets)]
        late = rng.random() < 0.75
        pause = round(rng.uniform(1.05, 2.0), 2)
        drawn = {"mix": SWARM, "pauses": {t: 1 for t in chosen},
                 "latency_ms": round(rng.uniform(20, max(20.0, 200 * cfg.ttl_s))) if late else None,
                 "pause_ttls": pause, "gap_ttls": round(pause + rng.uniform(0.3, 3.0), 2)}
    return schedule(drawn, cfg, rng), drawn


def schedule(drawn: dict, cfg, rng: random.Random) -> list[Step]:
    """The steps of a drawn mix: the late replies for the whole run, then pauses, each healed
    before the next starts, until the next would not end a pause's length and ``END_MARGIN_S``
    before the limit."""
    ttl, limit = cfg.ttl_s, cfg.time_limit_s
    steps: list[Step] = []
    if drawn.get("latency_ms"):
        steps.append(Step(0.0, "latency", "workers", round(limit - END_MARGIN_S - 0.1, 3),
                          float(drawn["latency_ms"]), {"background": True}))
    names = list(drawn["pauses"])
    weights = [drawn["pauses"][t] for t in names]
    length = drawn["pause_ttls"] * ttl
    t = min(ttl, limit / 4)
    # A pause aimed at a call waits for one (up to the fault's CALL_WAIT_S), and in turn the next
    # waits for it: a pause's length of slack at the end keeps the last from being cut by the run's
    # end (healed early, it would not have taken effect, and the run would be inconclusive).
    while t + 2 * length <= limit - END_MARGIN_S:
        target = rng.choices(names, weights)[0]
        steps.append(Step(round(t, 3), "pause", target, round(length, 3)))
        t += max(drawn["gap_ttls"] * ttl * rng.uniform(0.9, 1.1), length + 0.1)
    return steps


def fits(cfg) -> bool:
    """Whether a run of ``cfg``'s time limit and TTL has room for one of the default mix's pauses."""
    return any(s.fault == "pause" for s in draw(DEFAULT, cfg, renews=False)[0])
