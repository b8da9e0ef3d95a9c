"""Which of leasecheck's C extensions this checkout was built with: setup.py builds them next to
the sources where a C compiler is there, and without one the compiled modules never use them."""
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "leasecheck"


def built(name: str) -> bool:
    """Is ``leasecheck.<name>`` (``_board``, ``_linewrite``, ``_auditline``, ``_historyline``, ``_jobscan``) built here?"""
    return any(PACKAGE.glob(f"{name}.*.so"))
