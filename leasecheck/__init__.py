"""leasecheck: a Jepsen-style fault-injection harness for leases on a shared, volatile store.

The public API, for example::

    import leasecheck

    result = leasecheck.run(lease="token-cas", nemesis=["pause:holder"], time_limit="10s")
    assert result.valid is True, result.reasons

- `run` a lease under faults and check it; `check` a stored run directory; `hunt` with fresh seeds
  until one fails; `shrink` a failing run to a smaller scenario; `matrix` every lease under every
  fault mix — each returns a `Result` (or a summary of several) and writes run directories as the
  ``leasecheck`` command does.
- `Result` is one checked run (``results.json`` is its serialisation); `LeasecheckError` is the
  harness's exception family, `UsageError` bad input (raised before anything starts), `CheckError`
  a run directory that cannot be checked.

The installed package holds the repository's three halves as subpackages: ``leasecheck.harness``
(everything that runs), ``leasecheck.workloads`` (what a worker does, the leases under test) and
``leasecheck.checkers`` (reading a run directory and judging it); ``leasecheck.protocol`` names
what one half writes into a run directory and the other reads. Every module of theirs imports
``leasecheck`` first, and a worker process must start quickly: so the names above are loaded on
first use, not when ``leasecheck`` is imported.
"""
from __future__ import annotations

import importlib
from pathlib import Path

from leasecheck import _pure

# In a source checkout the subpackages are the repository's top-level folders, beside this one
# (setup.py maps them; installed, they are inside it). Python puts the working directory first on
# its path, so a process started in the repository's root finds this folder before any installed
# copy: let it find the subpackages there too.
_here = Path(__file__).resolve().parent
if not (_here / "harness").is_dir() and (_here.parent / "harness" / "__init__.py").is_file():
    __path__.append(str(_here.parent))

# The checker's hot modules may also be installed compiled (setup.py): the compiled build runs
# unless LEASECHECK_PURE_PYTHON is set or it is older than its sources (leasecheck/_pure.py).
_pure.install()

_EXPORTS = {
    "run": "leasecheck.harness.api", "check": "leasecheck.harness.api", "hunt": "leasecheck.harness.api",
    "shrink": "leasecheck.harness.api", "matrix": "leasecheck.harness.api",
    "Shrunk": "leasecheck.harness.api", "Matrix": "leasecheck.harness.api",
    "Tally": "leasecheck.harness.search.hunt", "Outcome": "leasecheck.harness.search.hunt",
    "Cell": "leasecheck.harness.search.matrix",
    "Result": "leasecheck.result", "Overlap": "leasecheck.result",
    "LeasecheckError": "leasecheck.harness.errors", "UsageError": "leasecheck.harness.errors",
    "StoreError": "leasecheck.harness.errors", "CheckError": "leasecheck.checkers.errors",
}
__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    if name not in _EXPORTS:
        raise AttributeError(f"module 'leasecheck' has no attribute {name!r}")
    value = getattr(importlib.import_module(_EXPORTS[name]), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
