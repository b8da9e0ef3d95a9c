"""Shared fixtures: an embedded redis-server per test module, started and stopped by PID; the
real ``leasecheck`` command line in a subprocess."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from leasecheck.harness.settings.config import RunConfig
from leasecheck.harness.errors import UsageError
from leasecheck.harness.run.host import default_store_bin
from leasecheck.harness.run.preflight import preflight
from leasecheck.harness.stores.embedded import EmbeddedStore
from leasecheck.rundir import load_results

ROOT = Path(__file__).resolve().parents[1]
DURATIONS = ROOT / "tests" / "durations.json"     # seconds per test file, for the order of collection


def pytest_configure(config):
    """Keep the collection's order of files under ``--dist loadfile``: pytest-xdist would otherwise
    hand them out by their number of tests (``--loadscope-reorder``, its default), not by their
    cost (below)."""
    if hasattr(config.option, "loadscopereorder"):
        config.option.loadscopereorder = False


@pytest.hookimpl(tryfirst=True)          # before `-m` deselects anything
def pytest_collection_modifyitems(config, items):
    """Every `integration` test and every test under tests/docker (marked `docker` there) is also
    `slow`: the fast subset, ``-m "not slow"``, is what is left (the unit tests that take seconds
    are marked `slow` by hand)."""
    docker = ROOT / "tests" / "docker"
    for item in items:
        if item.get_closest_marker("integration") or item.path.is_relative_to(docker):
            item.add_marker(pytest.mark.slow)
    # The longest files first, each file's tests still in their order: `-n N --dist loadfile`
    # hands files out in this order, so the long ones start early and the short unit-test files
    # fill the workers' ends. A file's cost is its seconds in tests/durations.json (measured:
    # `bench/suite_durations.py LOG --write tests/durations.json`); a file not listed counts 20 s
    # when it has a `slow` test, else 0. At -n 6 a run in alphabetical order ended with the two
    # shrink files (150-180 s each) started at 360 s and 400 s: 580 s against ~480 s for the rest.
    known = json.loads(DURATIONS.read_text()) if DURATIONS.exists() else {}
    slow_files = {item.path for item in items if item.get_closest_marker("slow")}

    def cost(item) -> float:
        name = item.path.relative_to(ROOT).as_posix() if item.path.is_relative_to(ROOT) else str(item.path)
        return known.get(name, 20.0 if item.path in slow_files else 0.0)
    items.sort(key=lambda item: -cost(item))


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    s = EmbeddedStore(default_store_bin(), tmp_path_factory.mktemp("store"))
    s.start()
    yield s
    s.stop()


@dataclass
class Outcome:
    code: int
    out: str
    err: str
    run_dir: Path | None

    @property
    def results(self) -> dict:
        return load_results(self.run_dir)


def _env(tmp_path: Path, extra: dict | None) -> dict:
    env = {"COLUMNS": "160", "PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "HOME": str(tmp_path)}
    if "DOCKER_HOST" in os.environ:
        env["DOCKER_HOST"] = os.environ["DOCKER_HOST"]
    env.update(extra or {})
    return env


def _cli(tmp_path: Path):
    """``run(*ARGS)``: ``python -m leasecheck ARGS`` in a subprocess, from the repository root, with
    ``HOME`` and (for ``run``, ``hunt`` and ``cleanup``) ``--results-dir`` under ``tmp_path``."""
    def run(*args: str, env: dict | None = None, timeout: float = 180) -> Outcome:
        cmd = [sys.executable, "-m", "leasecheck", *args]
        if args and args[0] in ("run", "hunt", "cleanup"):
            cmd += ["--results-dir", str(tmp_path / "results")]
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd=ROOT,
                           env=_env(tmp_path, env))
        latest = tmp_path / "results" / "latest"
        return Outcome(p.returncode, p.stdout, p.stderr, latest.resolve() if latest.exists() else None)
    return run


@pytest.fixture
def leasecheck(tmp_path):
    """Run ``python -m leasecheck ARGS`` and return its `Outcome` (``run``, ``hunt`` and ``cleanup`` get
    ``--results-dir tmp/results``); ``leasecheck.popen(ARGS)`` starts a run without waiting."""
    run = _cli(tmp_path)
    run.popen = lambda *args: subprocess.Popen(
        [sys.executable, "-m", "leasecheck", *args, "--results-dir", str(tmp_path / "results")],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT, env=_env(tmp_path, None))
    return run


@pytest.fixture(scope="module")
def leasecheck_once(tmp_path_factory):
    """``leasecheck`` for one test module, each distinct command run once: the tests of a module
    that assert on the same run share it (the `Outcome` of the first call, each command in a
    directory of its own). Only for commands whose outcome a test reads and does not change."""
    done: dict[tuple, Outcome] = {}

    def run(*args: str, timeout: float = 180) -> Outcome:
        if args not in done:
            done[args] = _cli(tmp_path_factory.mktemp("once"))(*args, timeout=timeout)
        return done[args]
    return run


def refused_by_preflight(**settings) -> str:
    """The one-line error the preflight gives for a `RunConfig` of ``settings``."""
    with pytest.raises(UsageError) as e:
        preflight(RunConfig(**settings))
    msg = str(e.value)
    assert "\n" not in msg
    return msg


def assert_claim_lost_in_failover(r) -> dict:
    """What ``scenarios/failover-loses-claim.toml`` must show on any backend: node1 stopped after
    an 800 ms cut of its replication, node2 promoted, a claim node2 never had lost in failover and
    won by another attempt (early loss, cause failover), told by a witness with a column per node
    and the summary's failover line. Returns the failover fault's measurements."""
    res, d = r.results, r.run_dir
    (fault,) = [f for f in res["faults"] if f["fault"] == "failover"]
    m = fault["measured"]
    assert fault["took_effect"] is True and m["primary_before"] == "node1" and m["promoted"] == "node2"
    assert 0 < m["promotion_s"] < 10 and m["unreplicated_bytes"] > 0 and m["lag_ms"] == 800
    assert res["claims"]["lost_in_failover"] >= 1 and res["early_loss"]["by_cause"]["failover"] >= 1
    first = res["failover"]["examples"][0]
    assert first["fate"] == "lost_in_failover" and first["cause"] == "failover"
    assert first["node"] == "node1" and first["promoted"] == "node2" and first["newcomer"] != first["attempt"]
    assert res["valid"] is False and "lost in failover" in res["reasons"][0] and "cause failover" in res["reasons"][0]
    witness = (d / "witness.md").read_text()
    assert "| time (s) | what | node1 | node2 |" in witness
    assert "A's claim created" in witness and "B's claim created" in witness
    assert res["audit"]["complete"] is True
    assert "node1 -> node2 (promoted at" in r.out           # the summary's failover line
    return m
