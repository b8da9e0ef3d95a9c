"""What pyproject.toml cannot say.

1. The distribution installs a single import name, ``leasecheck``, whose subpackages live in the
   repository's top-level folders.
2. The hot modules (`GROUPS`: the checker's, and the few a worker runs per lease call) are also
   compiled with mypyc into C extensions when
   mypy (a build requirement) and a C compiler are there and ``LEASECHECK_PURE_PYTHON`` is not
   set. The same ``.py`` files are installed either way; a failed compile never fails the
   install, it only leaves the pure-Python modules (with a warning). An editable install builds
   the extensions next to the sources (``checkers/**/*.so``, ...); so does
   ``python setup.py build_ext --inplace`` where mypy is installed. ``LEASECHECK_PURE_PYTHON=1`` at import time makes
   the package ignore them (``leasecheck/_pure.py``).
"""
import os
import shutil
import sys
from pathlib import Path

from setuptools import Extension, find_packages, setup
from setuptools.command.build_ext import build_ext

FOLDERS = ("harness", "workloads", "checkers")   # installed as leasecheck.<folder>
ROOT = Path(__file__).resolve().parent

# The modules every event and every audit line goes through (bench/profile_checker.py) and the
# report's timeline the digest feeds when a report is drawn, compiled as one mypyc group
# (``leasecheck/compiled__mypyc``), so that their calls into each other are C calls;
CHECKER = (
    "checkers/read/history.py", "checkers/read/audit.py", "checkers/read/ops.py", "checkers/read/digest.py",
    "checkers/read/jobs.py",
    "checkers/measures/hazards.py", "checkers/measures/releases.py", "checkers/measures/history_only.py",
    "checkers/measures/attempt_ends.py", "checkers/measures/exceptions.py", "checkers/measures/hung_calls.py",
    "checkers/measures/timeline.py", "checkers/measures/grid.py",
    "checkers/model/engine.py", "checkers/model/join.py", "checkers/model/claims.py",
    "checkers/model/store_model.py", "checkers/model/crosscheck.py",
    # the measures the properties take of every claim and job run once the pass is over
    "checkers/model/clock.py", "checkers/measures/liveness.py", "checkers/measures/overlap.py",
    "checkers/measures/effects.py", "checkers/measures/early_loss.py", "checkers/measures/tokens.py",
    "checkers/measures/causes.py",
)
# and a worker's claim loop with what it calls on every lease call — history lines, slot board,
# send tracker, draws, frozen-job check — with the hung-call watch and the harness's live counts that
# read the board (bench/worker_profile.py), as a group of their own (``leasecheck/worker__mypyc``).
# Neither group imports the other's modules. Apart, the code a worker runs for every command is
# a third of the size and close together in memory: with four workers on two cores, each resuming
# with what the others evicted from the CPU's caches, the workers took about 3 % less CPU per
# operation than with one group of everything (bench/RESULTS.md, "Item 2 ... sixth session").
WORKER = (
    "workloads/claim_loop.py", "harness/record/history.py", "harness/run/slot_board.py", "harness/run/hung_watch.py",
    "harness/run/live_stats.py", "harness/record/numbering.py", "harness/settings/durations.py", "workloads/stall.py",
)
GROUPS = (("leasecheck.compiled", CHECKER), ("leasecheck.worker", WORKER))   # leasecheck._pure.GROUPS
# With them, five small extensions written in C, which only the compiled modules use: a history
# file's sink, where a claim loop's line is stamped and formatted straight into the history's map
# (harness/record/history.py), a slot's record on the slot board (harness/run/slot_board.py)
# (bench/RESULTS.md, "Item 2 ... eighth session" and "... ninth session"), the checker's read
# of the commonest audit line (checkers/read/audit.py; "Items 1 and 2 ... eleventh session") and
# of the history's common lines (checkers/read/history.py; "Item 1 ... twelfth session"), and the
# live progress's search for job lines (harness/run/live_stats.py; the same session).
# Paths relative: pip requires it.
NATIVE = [Extension("leasecheck._linewrite", ["leasecheck/_linewrite.c"], extra_compile_args=["-O2"]),
          Extension("leasecheck._board", ["leasecheck/_board.c"], extra_compile_args=["-O2"]),
          Extension("leasecheck._auditline", ["leasecheck/_auditline.c"], extra_compile_args=["-O2"]),
          Extension("leasecheck._historyline", ["leasecheck/_historyline.c"], extra_compile_args=["-O2"]),
          Extension("leasecheck._jobscan", ["leasecheck/_jobscan.c"], extra_compile_args=["-O2"])]


def _warn(why: str) -> None:
    print(f"leasecheck: {why}; installing the pure-Python modules", file=sys.stderr)


def _stage() -> Path:
    """mypy names a module by its folders, and the repository's folders are not the import names
    (checkers/ is leasecheck.checkers): a tree of links that is, under build/."""
    stage = ROOT / "build" / "mypyc-src"
    pkg = stage / "leasecheck"
    shutil.rmtree(stage, ignore_errors=True)
    pkg.mkdir(parents=True)
    for f in (ROOT / "leasecheck").glob("*.py"):
        (pkg / f.name).symlink_to(f)
    for folder in FOLDERS:
        (pkg / folder).symlink_to(ROOT / folder, target_is_directory=True)
    (stage / "mypy.ini").write_text("[mypy]\nfollow_imports = silent\nignore_missing_imports = True\n")
    return stage


# The commands that build extensions (metadata-only steps such as egg_info need no mypy run).
BUILDS = {"build", "build_ext", "bdist_wheel", "editable_wheel", "install", "develop"}


def compiled_extensions() -> list:
    if os.environ.get("LEASECHECK_PURE_PYTHON") or not BUILDS & set(sys.argv[1:]):
        return []
    try:
        from mypyc.build import mypycify
    except ImportError:
        _warn("mypy is not installed where this is built (pip install -e . brings it)")
        return []
    here = os.getcwd()
    try:
        stage = _stage()
        os.chdir(stage)
        out = []
        for group, modules in GROUPS:
            out += mypycify(["--config-file", "mypy.ini"] + ["leasecheck/" + m for m in modules], group_name=group,
                            target_dir=str(ROOT / "build" / "mypyc" / group.split(".")[1]), opt_level="3")
        return out + NATIVE
    except (Exception, SystemExit) as e:   # noqa: BLE001 - mypyc reports a type error by exiting
        _warn(f"mypyc could not compile the hot modules ({e})")
        return []
    finally:
        os.chdir(here)


class OptionalBuildExt(build_ext):
    """Build the compiled modules if the machine can; otherwise leave the pure-Python ones."""

    def run(self) -> None:
        try:
            super().run()
        except Exception as e:   # noqa: BLE001 - no compiler, no Python headers, a compile error
            _warn(f"the compiled modules did not build ({e})")
            for out in self.get_outputs():
                Path(out).unlink(missing_ok=True)
            for ext in self.extensions:   # in place (editable): next to the sources
                Path(self.get_ext_fullpath(ext.name)).unlink(missing_ok=True)
            self.extensions = []

    def get_outputs(self) -> list:
        return super().get_outputs() if self.extensions else []


setup(
    packages=["leasecheck"] + [f"leasecheck.{p}" for p in find_packages(include=[f"{f}*" for f in FOLDERS])],
    package_dir={"leasecheck": "leasecheck", **{f"leasecheck.{f}": f for f in FOLDERS}},
    ext_modules=compiled_extensions(),
    cmdclass={"build_ext": OptionalBuildExt},
)
