"""The documentation site builds strictly, and its generated reference pages list what the code's
registries hold: every built-in lease, every fault, every option of `leasecheck run`."""
from __future__ import annotations

import html
import importlib.util
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow   # builds the whole site with mkdocs: not in the fast subset

ROOT = Path(__file__).resolve().parents[2]
MKDOCS = shutil.which("mkdocs", path=str(Path(sys.executable).parent)) or shutil.which("mkdocs")


def _hook():
    spec = importlib.util.spec_from_file_location("docs_reference_hook", ROOT / "docs" / "hooks" / "reference.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    if MKDOCS is None:
        pytest.fail("mkdocs is not installed: pip install -e '.[docs]' (the test extra includes it)")
    out = tmp_path_factory.mktemp("site")
    done = subprocess.run([MKDOCS, "build", "--strict", "--site-dir", str(out)], cwd=ROOT,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    return out


def _text(site: Path, page: str) -> str:
    """A built page's text, tags removed and entities decoded."""
    raw = (site / page / "index.html").read_text(encoding="utf-8")
    return html.unescape(re.sub(r"<[^>]+>", " ", raw))


def test_site_builds_strictly(site):
    assert (site / "index.html").is_file()
    assert (site / "measurements" / "index.html").is_file()


def test_lease_reference_lists_every_builtin_lease(site):
    from leasecheck.workloads.leases import BUILTIN
    text = _text(site, "reference/leases")
    missing = [name for name, target in BUILTIN.items() if name not in text or target not in text]
    assert not missing, f"not on the lease reference page: {missing}"


def test_fault_reference_lists_every_fault_and_target(site):
    from leasecheck.harness.faults import FAULTS
    text = _text(site, "reference/faults")
    missing = [f"{f.name}:{t}" for f in FAULTS.values() for t in (f.name, *f.targets) if t not in text]
    missing += [f"{f.name} {p.key}" for f in FAULTS.values() for p in f.params if p.key not in text]
    assert not missing, f"not on the fault reference page: {missing}"


def test_options_reference_lists_every_option_of_every_command(site):
    import click
    hook = _hook()
    text = _text(site, "reference/options")
    words = [w for w, _ in hook.commands()]
    assert "run" in words and "hunt" in words and "image build" in words
    missing = []
    for words, cmd in hook.commands():
        if f"leasecheck {words}" not in text:
            missing.append(f"leasecheck {words}")
        for p in cmd.params:
            if isinstance(p, click.Option):
                missing += [f"{words} {o}" for o in p.opts + p.secondary_opts if o not in text]
                if p.envvar and p.envvar not in text:
                    missing.append(f"{words} {p.envvar}")
    assert not missing, f"not on the options reference page: {missing}"
    from leasecheck.harness.cli import cli
    run_flags = [o for p in cli.commands["run"].params if isinstance(p, click.Option) for o in p.opts]
    assert "--lease" in run_flags and all(flag in text for flag in run_flags)


def test_results_and_exit_code_references_follow_the_code(site):
    from leasecheck.checkers.properties import PROPERTIES
    from leasecheck.harness import cli
    text = _text(site, "reference/results")
    fields = [f for p in PROPERTIES for f in p.FIELDS] + ["valid", "reasons", "ops", "audit", "certainty"]
    assert not [f for f in fields if f not in text]
    codes = _text(site, "reference/exit-codes")
    constants = [n for n in vars(cli) if n.startswith("EXIT_")]
    assert {cli.EXIT_VALID, cli.EXIT_INVALID, cli.EXIT_UNKNOWN, cli.EXIT_UNWRITABLE, cli.EXIT_USAGE,
            cli.EXIT_CRASH} == {0, 1, 2, 3, 64, 255}
    assert all(n in codes and str(getattr(cli, n)) in codes for n in constants)


def test_generators_fill_every_placeholder():
    hook = _hook()
    for page in (ROOT / "docs" / "reference").glob("*.md"):
        rendered = hook.render(page.read_text(encoding="utf-8"))
        assert "<!-- reference:" not in rendered, page.name
