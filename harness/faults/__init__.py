"""Faults ("nemesis" in Jepsen's words): one kind per module, all healed through the ledger.

``FAULTS`` maps a name to its kind; ``parse_nemesis`` reads ``--nemesis pause:holder,clock``.
"""
from __future__ import annotations

from harness.errors import UsageError
from harness.faults.base import Active, Fault, FaultContext, Step
from harness.faults.clock import Clock
from harness.faults.evict import Evict
from harness.faults.kill import Kill
from harness.faults.network import Latency, Partition
from harness.faults.pause import Pause

FAULTS: dict[str, Fault] = {f.name: f for f in (Pause(), Clock(), Latency(), Partition(), Kill(), Evict())}
NEEDS_PROXY = {"latency", "partition", "kill"}


def parse_nemesis(spec: str, cfg) -> list[tuple[str, str]]:
    """``"pause:holder,clock"`` -> [("pause", "holder"), ("clock", "store")], validated."""
    out = []
    for entry in (e.strip() for e in spec.split(",")):
        if not entry:
            continue
        name, _, target = entry.partition(":")
        fault = FAULTS.get(name)
        if fault is None:
            raise UsageError(f"--nemesis {entry}: no fault named {name!r}; the faults are "
                             f"{', '.join(FAULTS)} (optionally NAME:TARGET, e.g. pause:holder)")
        target = target or fault.default_target
        fault.validate(cfg, target)
        out.append((name, target))
    if not out:
        raise UsageError(f"--nemesis {spec!r}: name at least one fault, e.g. pause:holder")
    return out


__all__ = ["Active", "FAULTS", "NEEDS_PROXY", "Fault", "FaultContext", "Step", "parse_nemesis"]
