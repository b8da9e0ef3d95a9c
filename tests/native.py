"""Which of leasecheck's C extensions this checkout was built with: setup.py builds them next to
the sources where a C compiler is there, and without one the compiled modules never use them."""
import importlib
from pathlib import Path
from typing import Any

PACKAGE = Path(__file__).resolve().parents[1] / "leasecheck"


def built(name: str) -> bool:
    """Is ``leasecheck.<name>`` (``_board``, ``_linewrite``, ``_auditline``, ``_historyline``, ``_jobscan``) built here?"""
    return any(PACKAGE.glob(f"{name}.*.so"))


def function(name: str, attr: str, in_use: Any) -> Any:
    """``leasecheck.<name>.<attr>`` where ``name`` is built here, else None — and then ``in_use``
    (what the module that would call it holds for it) must be None: with no compiler where this
    was installed, nothing uses it."""
    if not built(name):
        assert in_use is None
        return None
    return getattr(importlib.import_module(f"leasecheck.{name}"), attr)


def changed(rng, data: bytes, alphabet: bytes) -> bytes:
    """``data`` changed in up to three places, each a byte of ``alphabet`` inserted, or a byte
    removed or replaced by one of ``alphabet``: what the C readers' tests feed them beside real lines."""
    out = bytearray(data)
    for _ in range(rng.randrange(4)):
        i = rng.randrange(len(out) + 1)
        op = rng.randrange(3)
        if op == 0:
            out[i:i] = bytes([rng.choice(alphabet)])
        elif i < len(out):
            if op == 1:
                del out[i]
            else:
                out[i] = rng.choice(alphabet)
    return bytes(out)
