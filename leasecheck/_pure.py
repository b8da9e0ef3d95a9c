"""Which build of the hot modules a process runs: the compiled one (setup.py's mypyc extensions
beside the sources, ``checkers/**/*.so`` and the workers' few) where it is there and current,
otherwise the ``.py`` files.

The two are the same modules — one source, compiled or not. The `.py` files are loaded even where
the extensions sit beside them when

- ``LEASECHECK_PURE_PYTHON=1`` is in the environment (to test or measure the pure-Python build on
  a machine that has the compiled one: `bench/checker_speed.py` prints both ratios), or
- a compiled module is older than its source (an edit, a pull, a checkout since the last build:
  Python would otherwise run the old code), said once on stderr with the command that rebuilds.

Never a mix: the compiled modules call each other directly, so either all of them are used or none.
`install()` puts the finder first on ``sys.meta_path``; it decides at the first import of a module
of the three halves (``leasecheck.checkers``, ``leasecheck.harness``, ``leasecheck.workloads``),
looking at every compiled module of them, whichever is imported first.
"""
from __future__ import annotations

import importlib.abc
import importlib.machinery
import importlib.util
import os
import sys
from pathlib import Path

FOLDERS = ("checkers", "harness", "workloads")    # setup.py's: installed as leasecheck.<folder>
PREFIXES = tuple(f"leasecheck.{folder}." for folder in FOLDERS)
VARIABLE = "LEASECHECK_PURE_PYTHON"
REBUILD = "pip install -e ."


# The extensions that hold the compiled code (setup.py's groups: the checker's modules, and the
# workers'), built together
GROUPS = ("compiled__mypyc", "worker__mypyc")
_HERE = Path(__file__).resolve().parent


def groups(group_dir=_HERE) -> list[Path]:
    """The group extensions there are in ``group_dir`` (``leasecheck/<group>*.so``)."""
    return [g for name in GROUPS for g in Path(group_dir).glob(name + ".*so")]


def stale(folders, group_dir=_HERE) -> list[str]:
    """The compiled modules under `folders` whose ``.py`` file is newer than their build: the
    module's own extension (a small shim, rebuilt only when the module's interface changes) or the
    groups' (``leasecheck/compiled__mypyc*.so`` and ``leasecheck/worker__mypyc*.so``, which hold the
    code), whichever is newer; and the C extensions beside the groups (``leasecheck/*.c``: ``_linewrite``,
    ``_board``) whose source is newer than their build. The newer group counts: one build makes both, and rebuilds only a
    group whose modules changed (so the other keeps its older time); a module edited since has a
    newer source than either."""
    built = max((g.stat().st_mtime for g in groups(group_dir)), default=0.0)
    out = []
    for src in Path(group_dir).glob("*.c"):     # the C extensions built with them
        if any(src.stat().st_mtime > ext.stat().st_mtime for ext in Path(group_dir).glob(src.stem + ".*so")):
            out.append(str(src))
    for folder in folders:
        for ext in Path(folder).rglob("*.so"):
            src = ext.with_name(ext.name.split(".", 1)[0] + ".py")
            if src.is_file() and src.stat().st_mtime > max(ext.stat().st_mtime, built):
                out.append(str(src))
    return sorted(out)


def halves(here: Path = _HERE) -> list[Path]:
    """Where the three halves' sources are: inside the package when installed, beside it in a
    source checkout (``leasecheck/__init__.py``)."""
    out = []
    for folder in FOLDERS:
        found = [base / folder for base in (here, here.parent) if (base / folder / "__init__.py").is_file()]
        out += found[:1]
    return out


class SourceOnly(importlib.abc.MetaPathFinder):
    """Finds a module's source file before any extension module of the same name, when the
    pure-Python build is to run (see the module docstring)."""

    def __init__(self) -> None:
        self.pure: bool | None = True if os.environ.get(VARIABLE) else None

    def _decide(self) -> bool:
        if self.pure is None:
            old = stale(halves())
            self.pure = bool(old)
            if old:
                print(f"leasecheck: the compiled modules are older than {len(old)} of their sources "
                      f"({Path(old[0]).name}, ...): running the pure-Python ones; rebuild them with "
                      f"`{REBUILD}`", file=sys.stderr)
        return self.pure

    def find_spec(self, name, path, target=None):
        if not name.startswith(PREFIXES) or not path or not self._decide():
            return None
        leaf = name.rpartition(".")[2] + ".py"
        for entry in path:
            src = Path(entry) / leaf
            if src.is_file():
                loader = importlib.machinery.SourceFileLoader(name, str(src))
                return importlib.util.spec_from_file_location(name, src, loader=loader)
        return None     # a package, or not a module of the halves: the usual finders


def install() -> None:
    if not any(isinstance(f, SourceOnly) for f in sys.meta_path):
        sys.meta_path.insert(0, SourceOnly())
