"""Faults ("nemesis" in Jepsen's words): one kind per module, all healed through the ledger.

The registry is built here and nowhere else: every module of this package is imported, and every
``Fault`` subclass with a ``name`` is one kind. A new fault is a new module (and its tests): the
CLI help, ``--nemesis`` parsing, scenario events, the proxy decision, the refusals for stores the
harness does not own and the healing of its ledger entries all come from what it declares.

``nemesis_entries`` reads ``--nemesis pause:holder,clock`` (``NAME[:TARGET[:OPTION]]``; the one
option today is the clock's direction, ``clock:store:both``).
"""
from __future__ import annotations

import importlib
import pkgutil

from leasecheck.harness.errors import UsageError
from leasecheck.harness.faults.base import Active, Fault, FaultContext, Param, Step


def _discover() -> dict[str, Fault]:
    for info in pkgutil.iter_modules(__path__):
        importlib.import_module(f"{__name__}.{info.name}")
    kinds, seen = [], set()
    todo = list(Fault.__subclasses__())
    while todo:
        cls = todo.pop()
        todo.extend(cls.__subclasses__())
        if cls.name and cls not in seen:
            seen.add(cls)
            kinds.append(cls())
    kinds.sort(key=lambda f: (f.order, f.name))
    names = [f.name for f in kinds]
    if len(set(names)) != len(names):
        raise RuntimeError(f"two fault kinds share a name: {names}")
    return {f.name: f for f in kinds}


FAULTS: dict[str, Fault] = _discover()
NEEDS_PROXY = {name for name, fault in FAULTS.items() if fault.needs_proxy}


def unknown_fault(name: str) -> str:
    return f"no fault named {name!r}; the faults are {', '.join(FAULTS)}"


def nemesis_help() -> str:
    """The --nemesis help, from the registry."""
    def targets(f: Fault) -> str:
        return "/".join([f.default_target] + [t for t in f.targets if t != f.default_target])
    kinds = "; ".join(f"{f.name} ({f.summary}; targets {targets(f)})" for f in FAULTS.values())
    return (f"Faults to inject on a random schedule, comma-separated NAME[:TARGET], e.g. pause:holder. {kinds}. "
            "The first target is the default. Store clock jumps go forward unless clock:store:both or "
            "clock:store:backward. Or a named mix, drawn from the seed: default (replies late all run, a pause past "
            "the deadline every 2 TTLs aimed at a releaser, holder, acquirer, renewer or any worker) or swarm (per "
            "seed a subset of those, with drawn sizes).")


def parse_nemesis(spec: str, cfg) -> list[tuple[str, str]]:
    """``"pause:holder,clock"`` -> [("pause", "holder"), ("clock", "store")], validated."""
    return [(name, target) for name, target, _ in nemesis_entries(spec, cfg)]


def nemesis_entries(spec: str, cfg, said=None) -> list[tuple[str, str, str | None]]:
    """``"pause:holder,clock:store:both"`` -> [("pause", "holder", None), ("clock", "store",
    "both")], each validated once. ``said(text)``: how the user wrote it, for errors (default
    ``--nemesis TEXT``; an environment variable or a scenario key otherwise)."""
    said = said or (lambda text: f"--nemesis {text}")
    out = []
    for entry in (e.strip() for e in spec.split(",")):
        if not entry:
            continue
        name, _, rest = entry.partition(":")
        target, _, option = rest.partition(":")
        fault = FAULTS.get(name)
        if fault is None:
            raise UsageError(f"{said(entry)}: {unknown_fault(name)} (optionally NAME:TARGET, e.g. pause:holder)")
        target = target or fault.default_target
        try:
            fault.validate(cfg, target)
        except UsageError as e:
            raise UsageError(said(str(e))) from None
        if option and option not in fault.options:
            takes = (f"{', '.join(fault.options)} after its target (e.g. {name}:{target}:{fault.options[-1]})"
                     if fault.options else "no option after its target")
            raise UsageError(f"{said(entry)}: {name} takes {takes}")
        out.append((name, target, option or None))
    if not out:
        raise UsageError(f"{said(repr(spec))}: name at least one fault, e.g. pause:holder")
    return out


__all__ = ["Active", "FAULTS", "NEEDS_PROXY", "Fault", "FaultContext", "Param", "Step", "nemesis_entries",
           "nemesis_help", "parse_nemesis", "unknown_fault"]
