"""The leasecheck_run fixture: how it names a lease, turns keywords into flags, refuses what
workers cannot import, passes the command line's bad-input line on, and explains a failing lease."""
import pytest

from harness.pytest_plugin import cli_args, lease_spec
from workloads.leases.naive_del import NaiveDel


class ModuleLevelLease(NaiveDel):
    """A team's lease defined in its test module: workers import it by the test module's name."""


def test_a_module_level_class_is_named_module_colon_name():
    assert lease_spec(ModuleLevelLease) == f"{__name__}:ModuleLevelLease"
    assert lease_spec(NaiveDel) == "workloads.leases.naive_del:NaiveDel"
    assert lease_spec("examples/my_lease.py:MyLease") == "examples/my_lease.py:MyLease"


def test_keywords_become_run_flags():
    assert cli_args({"time_limit": 4, "ttl": "2s", "nemesis": ["pause:holder", "kill"], "audit": False,
                     "sink": True, "seed": None}) == [
        "--time-limit", "4", "--ttl", "2s", "--nemesis", "pause:holder,kill", "--no-audit", "--sink"]


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
    assert msg.startswith("leasecheck:") and "--ttl" in msg and "\n" not in msg


@pytest.mark.integration
def test_a_failing_lease_says_why_in_its_repr(leasecheck_run):
    result = leasecheck_run(lease=ModuleLevelLease, nemesis=["pause:holder"], nemesis_interval="1s",
                            time_limit=5, workers=3, seed=7)
    assert result.valid is False and result.exit_code == 1
    assert result.foreign_releases >= 1
    assert (result.run_dir / "results.json").is_file() and result.results["foreign_releases"] >= 1
    shown = repr(result)
    assert "valid=False" in shown and "foreign release" in shown       # the reasons
    assert result.witness and result.witness.splitlines()[0] in shown  # the witness timeline
