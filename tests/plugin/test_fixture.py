"""The leasecheck_run fixture: how it names a lease, reads keywords as settings, refuses what
workers cannot import, passes the one-line bad-input error on, and explains a failing lease."""
import subprocess
import sys

import pytest

from leasecheck.harness.errors import UsageError
from leasecheck.harness.settings.keywords import config_from, lease_spec
from leasecheck.workloads.leases.naive_del import NaiveDel


class ModuleLevelLease(NaiveDel):
    """A team's lease defined in its test module: workers import it by the test module's name."""


def test_a_module_level_class_is_named_module_colon_name():
    assert lease_spec(ModuleLevelLease) == f"{__name__}:ModuleLevelLease"
    assert lease_spec(NaiveDel) == "leasecheck.workloads.leases.naive_del:NaiveDel"
    assert lease_spec("examples/my_lease.py:MyLease") == "examples/my_lease.py:MyLease"


def test_keywords_become_settings():
    cfg, given = config_from({"time_limit": 4, "ttl": "2s", "nemesis": ["pause:holder", "kill"], "audit": False,
                              "sink": True, "seed": None, "job_duration": "0.5s", "backend": "embedded"})
    assert (cfg.time_limit_s, cfg.ttl_s, cfg.nemesis, cfg.audit, cfg.sink, cfg.seed, cfg.job_duration) == \
        (4.0, 2.0, "pause:holder,kill", False, True, None, "0.5s")
    assert given["ttl_s"] == "arg:ttl"       # an error names the keyword as it was written
    assert config_from({"ttl_s": 1.5})[0].ttl_s == 1.5
    with pytest.raises(UsageError, match="no such setting"):
        config_from({"tll": "1s"})
    with pytest.raises(UsageError, match="whole number"):
        config_from({"workers": 2.5})


def test_a_class_defined_inside_a_test_function_gives_one_line(leasecheck_run, tmp_path):
    class LocalLease:
        def __init__(self, client, key, ttl_ms):
            pass

    with pytest.raises(pytest.fail.Exception) as e:
        leasecheck_run(lease=LocalLease, time_limit=1)
    msg = str(e.value)
    assert "\n" not in msg.strip()
    assert "inside a function cannot be imported by the worker processes" in msg and "module level" in msg
    assert not (tmp_path / "leasecheck").exists()   # refused before anything started


def test_bad_options_fail_with_the_command_lines_one_line(leasecheck_run):
    with pytest.raises(pytest.fail.Exception) as e:
        leasecheck_run(lease="token-cas", ttl="soon", time_limit=1)
    msg = str(e.value).strip()
    assert msg.startswith("leasecheck:") and "ttl" in msg and "soon" in msg and "\n" not in msg


FAILING_TEST = """
from leasecheck.workloads.leases.naive_del import NaiveDel


class TeamLease(NaiveDel):
    pass


def test_team_lease(leasecheck_run):
    # One worker, two slots, half the jobs outliving the 1 s lease: a late DEL by name frees the
    # sibling's claim within seconds, whatever the machine's load.
    result = leasecheck_run(lease=TeamLease, workers=1, slots=2, job_duration="50%:0.4s,50%:1.6s",
                            time_limit=6, seed=7)
    assert result.exit_code == 1 and result.foreign_releases >= 1 and result.data["valid"] is False
    assert result.valid is True, result
"""


@pytest.mark.integration
def test_a_failing_lease_says_why_in_the_test_report(tmp_path):
    """A lease defined at the top of a test module (workers import it by that module's name) that
    removes others' claims: the failed assertion names the verdict and its first reason on one line,
    and the report shows the run's reasons and witness."""
    (tmp_path / "test_team.py").write_text(FAILING_TEST)
    p = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                        "--basetemp", str(tmp_path / "basetemp"), "test_team.py"],
                       cwd=tmp_path, capture_output=True, text=True, timeout=180)
    out = p.stdout
    assert p.returncode == 1 and "1 failed" in out, out[-3000:] + p.stderr[-2000:]
    assert "AssertionError: <Result valid=False: " in out and "foreign release(s)" in out
    section = out[out.index("leasecheck run 1"):]
    assert "valid=False (safety=False liveness=True) exit_code=1" in section and "reason: " in section
    assert "witness:" in section and "## Foreign release on" in section
