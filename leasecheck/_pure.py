"""``LEASECHECK_PURE_PYTHON=1``: import the checker's ``.py`` modules even where the compiled
build (setup.py's mypyc extensions, ``checkers/**/*.so``) sits next to them.

The two are the same modules — one source, compiled or not — so the pure-Python checker can be
tested and measured on a machine that has the compiled one (`bench/checker_speed.py` prints both
ratios). `install()` puts a finder first on ``sys.meta_path`` that, for a module of
``leasecheck.checkers`` with a ``.py`` file, loads that file.
"""
from __future__ import annotations

import importlib.abc
import importlib.machinery
import importlib.util
import sys
from pathlib import Path

PREFIX = "leasecheck.checkers."
VARIABLE = "LEASECHECK_PURE_PYTHON"


class SourceOnly(importlib.abc.MetaPathFinder):
    """Finds a checker module's source file before any extension module of the same name."""

    def find_spec(self, name, path, target=None):
        if not name.startswith(PREFIX) or not path:
            return None
        leaf = name.rpartition(".")[2] + ".py"
        for entry in path:
            src = Path(entry) / leaf
            if src.is_file():
                loader = importlib.machinery.SourceFileLoader(name, str(src))
                return importlib.util.spec_from_file_location(name, src, loader=loader)
        return None     # a package, or not a checker module: the usual finders


def install() -> None:
    if not any(isinstance(f, SourceOnly) for f in sys.meta_path):
        sys.meta_path.insert(0, SourceOnly())

