"""What the README promises of the command line: every option also reads LEASECHECK_<OPTION>, and
an error names the setting the way the user wrote it — flag, variable or scenario line — never an
internal name. Run in-process (click's runner); nothing starts."""
import sys

import pytest

import leasecheck.harness.cli as cli
from leasecheck.harness.errors import UsageError


@pytest.fixture
def run(monkeypatch, capsys):
    """``leasecheck run ARGS`` through the real entry point (exit codes included): (code, stderr)."""
    def invoke(*args, env=None):
        for key, value in (env or {}).items():
            monkeypatch.setenv(key, value)
        monkeypatch.setattr(sys, "argv", ["leasecheck", "run", *args])
        with pytest.raises(SystemExit) as e:
            cli.main()
        return e.value.code, capsys.readouterr().err.strip()
    return invoke


@pytest.fixture
def seen(monkeypatch):
    """Stop at the preflight and keep the configuration it was given."""
    got = {}

    def fake(cfg, schedule_from="", given=None):
        got["cfg"], got["given"] = cfg, given
        raise UsageError("stopped before the start")
    monkeypatch.setattr(cli, "preflight", fake)
    return got


@pytest.mark.parametrize("var,value,field,expected", [
    ("LEASECHECK_TTL", "2s", "ttl_s", 2.0),                              # a duration
    ("LEASECHECK_WORKERS", "3", "workers", 3),                           # a number
    ("LEASECHECK_BACKEND", "docker", "backend", "docker"),               # a choice
    ("LEASECHECK_STORE_URL", "redis://127.0.0.1:1/0", "store_url", "redis://127.0.0.1:1/0"),  # text
    ("LEASECHECK_PROXY", "1", "proxy", True),                            # an on/off flag
    ("LEASECHECK_NEMESIS", "pause:holder", "nemesis", "pause:holder"),
])
def test_documented_variables_are_read(run, seen, var, value, field, expected):
    code, _ = run(env={var: value})
    assert code == cli.EXIT_USAGE and getattr(seen["cfg"], field) == expected
    assert seen["given"][field] == f"env:{var}"


def test_a_flag_wins_over_its_variable(run, seen):
    run("--ttl", "3s", env={"LEASECHECK_TTL": "2s"})
    assert seen["cfg"].ttl_s == 3.0 and "ttl_s" not in seen["given"]


@pytest.mark.parametrize("env,words", [
    ({"LEASECHECK_TTL": "0"}, ["LEASECHECK_TTL=0s", "greater than 0"]),
    ({"LEASECHECK_TTL": "soon"}, ["LEASECHECK_TTL 'soon'", "400ms"]),
    ({"LEASECHECK_WORKERS": "0"}, ["LEASECHECK_WORKERS=0", "at least 1"]),
    ({"LEASECHECK_BACKEND": "bogus"}, ["LEASECHECK_BACKEND", "bogus"]),
    ({"LEASECHECK_STORE_URL": "http://x"}, ["LEASECHECK_STORE_URL=http://x", "redis://HOST:PORT/DB"]),
    ({"LEASECHECK_NEMESIS": "pause:holdr"}, ["LEASECHECK_NEMESIS=pause:holdr", "pause targets are"]),
])
def test_a_bad_variable_is_named_not_a_flag(run, env, words):
    code, err = run(env=env)
    assert code == cli.EXIT_USAGE, err
    assert all(w in err for w in words), err
    assert "--ttl" not in err and "--workers" not in err and "--nemesis" not in err and "--store-url" not in err


def test_no_internal_name_leaks(run):
    code, err = run("--ttl", "-1s")
    assert code == cli.EXIT_USAGE and "--ttl '-1s'" in err and "ttl-s" not in err and "ttl_s" not in err


def test_scenario_settings_are_named_by_file_and_line(run, tmp_path):
    f = tmp_path / "s.toml"
    f.write_text('[run]\nlease = "token-cas"\n\nworkers = 0\n')
    code, err = run("--scenario", str(f))
    assert code == cli.EXIT_USAGE and f"{f}:4: workers = 0" in err and "--workers" not in err


def test_scenario_fault_typos_never_name_nemesis(run, tmp_path):
    f = tmp_path / "s.toml"
    f.write_text('[[event]]\nat = "1s"\nfault = "pause"\ntarget = "holdr"\nduration = "1s"\n')
    code, err = run("--scenario", str(f))
    assert code == cli.EXIT_USAGE and f"{f}:4" in err and "holdr" in err and "--nemesis" not in err
    f.write_text('[[event]]\nat = "1s"\nfault = "pasue"\nduration = "1s"\n')
    code, err = run("--scenario", str(f))
    assert f"{f}:3" in err and "pasue" in err and "--nemesis" not in err
    f.write_text('[[event]]\nat = "1s"\nfault = "clock"\nduration = "1s"\noffset = "later"\n')
    code, err = run("--scenario", str(f))
    assert f"{f}:5" in err and "offset 'later'" in err     # the key's own line, not the header's


def test_a_missing_plugin_module_is_one_line(run):
    code, err = run("--lease", "no_such_package.leases:Lease")
    assert code == cli.EXIT_USAGE and len(err.splitlines()) == 1
    assert "no module named 'no_such_package.leases'" in err and "Traceback" not in err
