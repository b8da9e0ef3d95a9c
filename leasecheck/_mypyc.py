"""``mypyc_attr`` for the compiled modules (setup.py): mypy_extensions' where it is installed (it
comes with mypy, the build's requirement), else a decorator that changes nothing — it only tells
the mypyc build something, and a pure-Python install may not have mypy_extensions."""
from __future__ import annotations

try:
    from mypy_extensions import mypyc_attr
except ImportError:     # pragma: no cover - the pure-Python install without mypy
    def mypyc_attr(*_names, **_flags):  # type: ignore[no-redef]
        return lambda cls: cls

__all__ = ["mypyc_attr"]
