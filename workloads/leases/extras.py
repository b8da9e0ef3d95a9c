"""The lock libraries some built-in leases wrap are an optional extra, not a dependency of the
harness. When one is missing, choosing its lease is bad input like any other: one line naming the
package and the command that installs it, before anything starts (not an import traceback)."""
from __future__ import annotations

import importlib
from types import ModuleType

from leasecheck.harness.errors import UsageError

INSTALL = "pip install -e '.[libs]'"


def require(module: str, package: str, lease: str) -> ModuleType:
    """Import ``module`` (from the distribution ``package``) for ``--lease lease``."""
    try:
        return importlib.import_module(module)
    except ImportError as e:
        raise UsageError(f"--lease {lease} needs the {package} package, which did not import "
                         f"({e}); install the extra: {INSTALL}") from None
