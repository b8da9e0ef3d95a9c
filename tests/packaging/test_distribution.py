"""What installing the distribution puts on a machine: one import name, and nothing foreign tracked.

The wheel is built from the tracked files alone (copied out of the working tree, as a clean
checkout would have them), installed into an empty folder, and its installed file list read back.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import zipfile
from importlib import metadata
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow   # builds the distribution: not in the fast subset

ROOT = Path(__file__).resolve().parents[2]


def _tracked() -> list[str]:
    out = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout
    return [p for p in out.decode().split("\0") if p]


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> Path:
    """A folder holding exactly what ``pip install .`` installs (no dependencies)."""
    base = tmp_path_factory.mktemp("dist")
    src = base / "src"
    for rel in _tracked():
        if (ROOT / rel).is_file():
            (src / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / rel, src / rel)
    pip = [sys.executable, "-m", "pip", "-q", "--disable-pip-version-check"]
    # The pure-Python wheel: the same files without the checker's mypyc extensions, whose compile
    # took ~130 s of this file's ~135 (the editable install CI runs first compiles them, and
    # tests/checkers/test_compiled_build.py checks that build).
    env = dict(os.environ, LEASECHECK_PURE_PYTHON="1")
    subprocess.run(pip + ["wheel", "--no-deps", "-w", str(base / "wheel"), str(src)], check=True,
                   capture_output=True, env=env)
    (wheel,) = (base / "wheel").glob("leasecheck-*.whl")
    subprocess.run(pip + ["install", "--no-deps", "--target", str(base / "site"), str(wheel)], check=True,
                   capture_output=True)
    return base / "site"


def test_one_top_level_import_name(installed):
    dist = next(metadata.distributions(path=[str(installed)]))
    assert dist.metadata["Name"] == "leasecheck"
    files = [f for f in dist.files if f.suffix == ".py"]
    assert files, "the distribution installs no Python file"
    assert {f.parts[0] for f in files} == {"leasecheck"}, sorted({f.parts[0] for f in files})
    assert (dist.read_text("top_level.txt") or "leasecheck").split() == ["leasecheck"]
    # the three halves, the run-directory contract and the report's templates are inside it
    names = {f.as_posix() for f in dist.files}
    for inside in ("leasecheck/harness/cli.py", "leasecheck/workloads/claim_loop.py",
                   "leasecheck/checkers/verdict.py", "leasecheck/protocol.py",
                   "leasecheck/harness/reports/html/templates/report.html.j2"):
        assert inside in names


def test_the_command_and_the_pytest_plugin_point_inside(installed):
    dist = next(metadata.distributions(path=[str(installed)]))
    eps = {(e.group, e.name): e.value for e in dist.entry_points}
    assert eps[("console_scripts", "leasecheck")] == "leasecheck.harness.cli:main"
    assert eps[("pytest11", "leasecheck")] == "leasecheck.harness.pytest_plugin"


def test_every_source_package_is_installed(installed):
    """A new folder with an ``__init__.py`` under harness/, workloads/ or checkers/ is installed too."""
    for folder in ("harness", "workloads", "checkers"):
        for init in (ROOT / folder).rglob("__init__.py"):
            rel = init.relative_to(ROOT)
            assert (installed / "leasecheck" / rel).is_file(), rel


ARCHIVES = (".whl", ".tar.gz", ".tgz", ".zip", ".egg", ".jar", ".so", ".exe", ".tar", ".gz", ".xz", ".bz2", ".7z")


def test_no_tracked_binary_or_package_archive():
    bad = []
    for rel in _tracked():
        path = ROOT / rel
        if not path.is_file():
            continue
        head = path.read_bytes()[:8192]
        if rel.endswith(ARCHIVES) or b"\0" in head or zipfile.is_zipfile(path):
            bad.append(rel)
    assert bad == [], f"tracked binaries or archives: {bad}"


def test_the_repository_root_finds_the_subpackages_without_an_install():
    """Started in the repository's root, Python finds ./leasecheck before any installed copy (the
    working directory comes first): the subpackages must then come from the root's folders, as
    when a non-editable install's worker processes start there. ``-S``: no site-packages at all."""
    code = "import leasecheck.harness.errors as e, leasecheck.workloads as w; print(e.__file__); print(w.__file__)"
    out = subprocess.run([sys.executable, "-S", "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert out.stdout.split() == [str(ROOT / "harness" / "errors.py"), str(ROOT / "workloads" / "__init__.py")]
