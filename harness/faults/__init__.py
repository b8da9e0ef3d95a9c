"""Faults ("nemesis" in Jepsen's words): one kind per module, all healed through the ledger.

``FAULTS`` maps a name to its kind; ``parse_nemesis`` reads ``--nemesis pause:holder,clock``
(``NAME[:TARGET[:OPTION]]``; the one option today is the clock's direction, ``clock:store:both``).
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
NEEDS_PROXY = {name for name, fault in FAULTS.items() if fault.needs_proxy}


def parse_nemesis(spec: str, cfg) -> list[tuple[str, str]]:
    """``"pause:holder,clock"`` -> [("pause", "holder"), ("clock", "store")], validated."""
    return [(name, target) for name, target, _ in nemesis_entries(spec, cfg)]


def nemesis_entries(spec: str, cfg) -> list[tuple[str, str, str | None]]:
    """``"pause:holder,clock:store:both"`` -> [("pause", "holder", None), ("clock", "store",
    "both")], validated."""
    out = []
    for entry in (e.strip() for e in spec.split(",")):
        if not entry:
            continue
        name, _, rest = entry.partition(":")
        target, _, option = rest.partition(":")
        fault = FAULTS.get(name)
        if fault is None:
            raise UsageError(f"--nemesis {entry}: no fault named {name!r}; the faults are "
                             f"{', '.join(FAULTS)} (optionally NAME:TARGET, e.g. pause:holder)")
        target = target or fault.default_target
        fault.validate(cfg, target)
        if option and option not in fault.options:
            takes = (f"{', '.join(fault.options)} after its target (e.g. {name}:{target}:{fault.options[-1]})"
                     if fault.options else "no option after its target")
            raise UsageError(f"--nemesis {entry}: {name} takes {takes}")
        out.append((name, target, option or None))
    if not out:
        raise UsageError(f"--nemesis {spec!r}: name at least one fault, e.g. pause:holder")
    return out


__all__ = ["Active", "FAULTS", "NEEDS_PROXY", "Fault", "FaultContext", "Step", "nemesis_entries",
           "parse_nemesis"]
