"""The ``leasecheck_run`` pytest fixture: a team checks its own lease from its own test suite.

Registered through the ``pytest11`` entry point, so installing leasecheck is enough. Each call runs
``python -m leasecheck run`` in a subprocess with the run directory under the test's ``tmp_path``: the
same code path as ``leasecheck run`` (workers are processes anyway), so a test sees exactly the
verdict the command line would give. Only the standard library and pytest are imported here,
because every pytest session in an environment with leasecheck loads this module.
"""
from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from leasecheck.harness.settings.durations import parse_duration
from leasecheck.rundir import LATEST, RunFiles, load_results

# The command line's exit codes (leasecheck.harness.cli); copied so loading the plugin stays cheap.
EXIT_USAGE, EXIT_CRASH = 64, 255


@dataclass(repr=False)
class LeaseResult:
    """One run's verdict and counts, read from its ``results.json``; ``results`` is the whole dict."""
    valid: bool | str          # True, False or "unknown"
    exit_code: int
    run_dir: Path
    results: dict = field(default_factory=dict)

    @property
    def foreign_releases(self) -> int:
        return int(self.results.get("foreign_releases") or 0)

    @property
    def overlap(self) -> dict:
        """``count`` (job runs that overlapped another), ``rate`` (share of busy time with >= 2 holders)."""
        o = self.results.get("overlap") or {}
        return {"count": int(o.get("count") or 0), "rate": float(o.get("rate") or 0.0)}

    @property
    def early_loss(self) -> int:
        return int((self.results.get("early_loss") or {}).get("count") or 0)

    @property
    def releases_found_nothing(self) -> int:
        return int(self.results.get("releases_found_nothing") or 0)

    @property
    def claims_seen(self) -> int:
        return int((self.results.get("claims_seen") or {}).get("count") or 0)

    @property
    def reasons(self) -> list[str]:
        return list(self.results.get("reasons") or [])

    @property
    def witness(self) -> str:
        """The checker's witness timeline as Markdown ("" when the run has none)."""
        path = RunFiles(self.run_dir).witness_md
        if path.is_file():
            return path.read_text()
        return ((self.results.get("witness") or {}).get("markdown")) or ""

    def __repr__(self) -> str:
        # One line, verdict and reasons first: pytest cuts a long repr in an assertion message.
        return (f"<LeaseResult valid={self.valid!r}: {'; '.join(self.reasons) or 'no reasons'} | "
                f"foreign_releases={self.foreign_releases} overlap={self.overlap['count']} "
                f"early_loss={self.early_loss} releases_found_nothing={self.releases_found_nothing} "
                f"claims_seen={self.claims_seen} exit_code={self.exit_code} run_dir={self.run_dir}>")

    def explain(self) -> str:
        """The verdict, every count, the reasons and the witness on lines of their own: what a
        failing test shows (``str(result)`` too)."""
        lines = [f"valid={self.valid!r} exit_code={self.exit_code} foreign_releases={self.foreign_releases} "
                 f"overlap={self.overlap['count']} ({self.overlap['rate']:.1%} of busy time) "
                 f"early_loss={self.early_loss} releases_found_nothing={self.releases_found_nothing} "
                 f"claims_seen={self.claims_seen}",
                 f"run_dir: {self.run_dir}", *[f"reason: {r}" for r in self.reasons]]
        if self.witness:
            lines += ["witness:", self.witness.rstrip("\n")]
        return "\n".join(lines)

    __str__ = explain


def lease_spec(lease) -> str:
    """The ``--lease`` value for a class (``module:Name``, which worker processes import) or a
    string (a built-in name or ``path.py:Name``, passed as given)."""
    if isinstance(lease, str):
        return lease
    if not isinstance(lease, type):
        raise TypeError(f"lease={lease!r}: give a lease class or a string (built-in name or FILE.py:Class)")
    module, qualname = lease.__module__, lease.__qualname__
    if "<locals>" in qualname:
        pytest.fail(f"lease={qualname}: a class defined inside a function cannot be imported by the worker "
                    "processes; define it at module level (or pass 'FILE.py:Class')", pytrace=False)
    if "." in qualname or module == "__main__":
        pytest.fail(f"lease={module}.{qualname}: worker processes import a lease as module:Name; define it "
                    "at the top level of an importable module (or pass 'FILE.py:Class')", pytrace=False)
    return f"{module}:{qualname}"


def cli_args(options: dict) -> list[str]:
    """``run`` flags from keywords: ``time_limit=10`` -> ``--time-limit 10``, ``audit=False`` ->
    ``--no-audit``, ``nemesis=["pause:holder", "kill"]`` -> ``--nemesis pause:holder,kill``."""
    args: list[str] = []
    for key, value in options.items():
        if value is None:
            continue
        flag = "--" + key.replace("_", "-")
        if isinstance(value, bool):
            args.append(flag if value else "--no-" + key.replace("_", "-"))
        elif isinstance(value, (list, tuple)):
            args += [flag, ",".join(str(v) for v in value)]
        else:
            args += [flag, str(value)]
    return args


def _pythonpath() -> str:
    """This process's import path, so workers import a test module's lease just as the test did
    (pytest puts a test's root directory there); the interpreter's own directories are left out,
    a child finds those itself and in their usual order."""
    own = {sysconfig.get_path(name) for name in ("stdlib", "platstdlib", "purelib", "platlib")}
    entries = [p for p in sys.path if p and p not in own and Path(p).is_dir()]
    if os.environ.get("PYTHONPATH"):
        entries.append(os.environ["PYTHONPATH"])
    return os.pathsep.join(entries)


def _seconds(time_limit) -> float:
    """The run's time limit in seconds for the subprocess timeout; a bad value is left to the
    command line, which names the fix."""
    try:
        return parse_duration(str(time_limit if time_limit is not None else 30))
    except Exception:  # noqa: BLE001 - reported by `leasecheck run` itself
        return 30.0


def run_lease(results_dir: Path, lease, timeout: float | None = None, **options) -> LeaseResult:
    """Run one scenario through ``python -m leasecheck run`` and read its verdict. Bad options fail the
    test with the command line's one-line error; a harness crash fails it with the tail of stderr."""
    cmd = [sys.executable, "-m", "leasecheck", "run", "--lease", lease_spec(lease),
           *cli_args(options), "--results-dir", str(results_dir)]
    env = dict(os.environ, PYTHONPATH=_pythonpath())
    limit = timeout if timeout is not None else 120 + 3 * _seconds(options.get("time_limit"))
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=limit)
    except subprocess.TimeoutExpired:
        pytest.fail(f"leasecheck run did not finish within {limit:g} s: {' '.join(cmd)}", pytrace=False)
    if p.returncode == EXIT_USAGE:
        pytest.fail(p.stderr.strip() or f"leasecheck run: bad input (exit {EXIT_USAGE})", pytrace=False)
    latest = results_dir / LATEST
    run_dir = latest.resolve() if latest.exists() else None
    if p.returncode == EXIT_CRASH or run_dir is None or not RunFiles(run_dir).results.is_file():
        tail = "\n".join(p.stderr.strip().splitlines()[-20:])
        pytest.fail(f"leasecheck run crashed (exit {p.returncode}):\n{tail}", pytrace=False)
    results = load_results(run_dir)
    return LeaseResult(valid=results.get("valid", "unknown"), exit_code=p.returncode, run_dir=run_dir,
                       results=results)


RESULTS_KEY = pytest.StashKey[list]()


@pytest.fixture
def leasecheck_run(request, tmp_path):
    """Call ``leasecheck_run(lease=MyLease, nemesis=["pause:holder"], time_limit=10, ...)`` with any
    ``leasecheck run`` option as a keyword (and ``timeout=`` seconds for the whole subprocess); returns
    a `LeaseResult`. Runs go to ``tmp_path/leasecheck``. When the test fails, its report gets a section per run with the reasons and the witness."""
    results = request.node.stash.setdefault(RESULTS_KEY, [])

    def run(lease, **options) -> LeaseResult:
        result = run_lease(tmp_path / "leasecheck", lease, **options)
        results.append(result)
        return result
    return run


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    """A failing test that ran leases shows why each run got its verdict, whatever it asserted."""
    report = yield
    if report.failed and call.when == "call":
        for i, result in enumerate(item.stash.get(RESULTS_KEY, []), 1):
            report.sections.append((f"leasecheck run {i}", result.explain()))
    return report
