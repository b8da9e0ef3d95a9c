"""The fork server (``leasecheck.harness.run.fork_server``): its children are the processes
``subprocess.Popen`` made for the runner — real PIDs, exit codes, pipes, log, environment, a session
of their own, no other descriptor — and it forks nothing it cannot serve."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from leasecheck.harness.run.fork_server import ForkServer, Forked, UNKNOWN_EXIT, forked_role

DATA = Path(__file__).resolve().parent / "data" / "fork"


def _env(**extra) -> dict[str, str]:
    env = dict(os.environ, PYTHONUNBUFFERED="1", **extra)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(DATA), env.get("PYTHONPATH")]))
    return env


@pytest.fixture
def server(tmp_path):
    # Started with SIGINT handled, as from a terminal: a process started in the background by a
    # shell inherits SIGINT ignored, and so would the server and every fresh interpreter here.
    before = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        env = _env()
        with open(tmp_path / "server.log", "ab") as log:
            s = ForkServer(["fork_target"], env, log)
        yield s
        s.close()
        assert s.proc.returncode is not None
    finally:
        signal.signal(signal.SIGINT, before)


def _spawn(server: ForkServer, tmp_path: Path, *args: str, env=None) -> Forked | None:
    with open(tmp_path / "child.log", "ab") as log:
        return server.spawn("fork_target", list(args), env or server.env, log)


def _report(server, tmp_path) -> tuple[Forked, dict]:
    w = _spawn(server, tmp_path, "report")
    assert isinstance(w, Forked)
    out = w.stdout.read()
    assert w.wait(30) == 0
    return w, json.loads(out)


def test_the_pid_is_the_workers_own_in_a_session_of_its_own(server, tmp_path):
    w, r = _report(server, tmp_path)
    assert r["pid"] == w.pid != server.pid
    assert r["ppid"] == server.pid            # forked by the server ...
    assert r["imported_in"] == server.pid     # ... from the modules it imported once
    assert r["sid"] == r["pgid"] == w.pid     # start_new_session=True, as the runner's Popen
    assert r["argv"] == [str(DATA / "fork_target.py"), "report"]


def test_the_child_has_the_runs_environment_and_only_its_three_descriptors(server, tmp_path):
    _, r = _report(server, tmp_path)
    assert r["env"] == server.env
    assert r["fds"] == [0, 1, 2]              # the socket, the status pipes, the server's own: closed
    assert r["stdio"] == [False, False]


def test_signal_handlers_are_a_fresh_interpreters(server, tmp_path):
    _, r = _report(server, tmp_path)
    code = ("import signal,json;print(json.dumps({signal.Signals(s).name: repr(signal.getsignal(s)) for s in "
            "(signal.SIGINT, signal.SIGTERM, signal.SIGCHLD, signal.SIGPIPE, signal.SIGHUP)}))")
    fresh = json.loads(subprocess.run([sys.executable, "-c", code], env=server.env, capture_output=True,
                                      check=True).stdout)
    assert r["handlers"] == fresh
    assert "default_int_handler" in r["handlers"]["SIGINT"]       # not the server's SIG_IGN
    assert r["handlers"]["SIGCHLD"] == repr(signal.SIG_DFL)        # not the server's reaper


def test_each_child_draws_its_own_random_numbers(server, tmp_path):
    draws = {_report(server, tmp_path)[1]["random"] for _ in range(3)}
    assert len(draws) == 3


def test_stdin_and_stdout_are_pipes_to_the_runner(server, tmp_path):
    w = _spawn(server, tmp_path, "echo")
    assert w.stdout.readline() == b"ready\n"
    w.stdin.write(b"hello there\n")
    assert w.stdout.readline() == b"got hello there\n"
    assert w.poll() is None and w.returncode is None
    w.stdin.write(b"exit 4\n")
    assert w.wait(30) == 4
    assert w.stdout.read() == b""


def test_stdin_closing_is_seen_by_the_child(server, tmp_path):
    w = _spawn(server, tmp_path, "echo")
    assert w.stdout.readline() == b"ready\n"
    w.stdin.close()
    assert w.wait(30) == 7


@pytest.mark.parametrize("args, code", [(("exit", "0"), 0), (("exit", "3"), 3), (("_exit", "5"), 5),
                                        (("raise",), 1)])
def test_exit_codes_are_the_childs(server, tmp_path, args, code):
    w = _spawn(server, tmp_path, *args)
    assert w.wait(30) == code
    assert w.poll() == code == w.returncode


def test_a_raise_goes_to_the_childs_log(server, tmp_path):
    assert _spawn(server, tmp_path, "raise").wait(30) == 1
    assert _spawn(server, tmp_path, "stderr").wait(30) == 0
    log = (tmp_path / "child.log").read_text()
    assert "RuntimeError: from the child" in log and "to the log" in log


def test_stopped_and_killed_by_its_pid(server, tmp_path):
    w = _spawn(server, tmp_path, "sleep")
    assert w.stdout.readline() == b"ready\n"
    with pytest.raises(subprocess.TimeoutExpired):
        w.wait(0.2)
    os.kill(w.pid, signal.SIGSTOP)            # pause:* stops a worker by its PID
    assert w.poll() is None
    os.kill(w.pid, signal.SIGCONT)
    os.kill(w.pid, signal.SIGTERM)            # signal.pause() and no handler: the default ends it
    assert w.wait(30) == -signal.SIGTERM
    w2 = _spawn(server, tmp_path, "sleep")
    assert w2.stdout.readline() == b"ready\n"
    w2.kill()
    assert w2.wait(30) == -signal.SIGKILL
    assert not Path(f"/proc/{w2.pid}").exists()   # reaped once its exit is known, as Popen.wait
    w2.kill()                                     # a second kill of an ended child does nothing


def test_a_wait_in_another_thread_leaves_poll_free(server, tmp_path):
    import threading
    w = _spawn(server, tmp_path, "sleep")
    assert w.stdout.readline() == b"ready\n"
    t = threading.Thread(target=lambda: pytest.raises(subprocess.TimeoutExpired, w.wait, 1.0))
    t.start()
    time.sleep(0.1)
    started = time.monotonic()
    assert w.poll() is None
    assert time.monotonic() - started < 0.5
    t.join()
    w.kill()
    assert w.wait(30) == -signal.SIGKILL


def test_an_environment_other_than_the_servers_is_not_served(server, tmp_path):
    assert _spawn(server, tmp_path, "report", env=dict(server.env, LD_PRELOAD="x.so")) is None
    own, server.env = server.env, dict(server.env, EXTRA="1")   # past the runner's check: the server's own
    assert _spawn(server, tmp_path, "report") is None and "environment" in server.refused
    server.env = own
    assert _spawn(server, tmp_path, "exit", "0").wait(30) == 0      # still serving the others
    with open(tmp_path / "child.log", "ab") as log:
        assert server.spawn("not_imported_here", [], server.env, log) is None


@pytest.mark.parametrize("module, why", [("fork_threaded", "thread"), ("fork_socket", "socket")])
def test_a_server_whose_imports_started_a_thread_or_opened_a_socket_forks_nothing(tmp_path, module, why):
    with open(tmp_path / "server.log", "ab") as log:
        s = ForkServer([module], _env(), log)
    try:
        with open(tmp_path / "child.log", "ab") as log:
            assert s.spawn(module, [], s.env, log) is None
        assert not s.available and why in s.refused
    finally:
        s.close()


def test_a_server_that_failed_to_start_forks_nothing(tmp_path):
    with open(tmp_path / "server.log", "ab") as log:
        s = ForkServer(["no_such_module_here"], _env(), log)
    try:
        with open(tmp_path / "child.log", "ab") as log:
            assert s.spawn("no_such_module_here", [], s.env, log) is None
    finally:
        assert s.close() == 1
    assert "ModuleNotFoundError" in (tmp_path / "server.log").read_text()


def test_close_ends_the_server_by_its_pid_and_leaves_its_children(tmp_path):
    with open(tmp_path / "server.log", "ab") as log:
        s = ForkServer(["fork_target"], _env(), log)
    w = _spawn(s, tmp_path, "echo")
    assert w.stdout.readline() == b"ready\n"
    assert s.close() == 0
    assert not Path(f"/proc/{s.pid}").exists()
    w.stdin.write(b"still here\n")                # the worker outlives its server
    assert w.stdout.readline() == b"got still here\n"
    assert w.poll() is None
    w.stdin.write(b"exit 0\n")
    assert w.wait(30) == UNKNOWN_EXIT             # its code died with the server: known as unknown
    with open(tmp_path / "child.log", "ab") as log:
        assert s.spawn("fork_target", ["exit", "0"], s.env, log) is None


def test_a_server_killed_leaves_its_children_running(tmp_path):
    with open(tmp_path / "server.log", "ab") as log:
        s = ForkServer(["fork_target"], _env(), log)
    try:
        w = _spawn(s, tmp_path, "echo")
        assert w.stdout.readline() == b"ready\n"
        os.kill(s.pid, signal.SIGKILL)
        s.proc.wait(30)
        assert w.poll() is None
        w.kill()
        assert w.wait(30) == UNKNOWN_EXIT
        assert _spawn(s, tmp_path, "exit", "0") is None
    finally:
        s.close()


# -- in a run ------------------------------------------------------------------------------------
@pytest.fixture
def watched(monkeypatch):
    """The fork servers a run starts and what each spawn returned (None: not served)."""
    from leasecheck.harness.run import fork_server
    seen = {"servers": [], "spawned": []}
    init, spawn = fork_server.ForkServer.__init__, fork_server.ForkServer.spawn

    def watched_init(self, *a, **k):
        init(self, *a, **k)
        seen["servers"].append(self)

    def watched_spawn(self, *a, **k):
        w = spawn(self, *a, **k)
        seen["spawned"].append(w)
        return w
    monkeypatch.setattr(fork_server.ForkServer, "__init__", watched_init)
    monkeypatch.setattr(fork_server.ForkServer, "spawn", watched_spawn)
    return seen


def _started_pids(run_dir: Path) -> list[int]:
    lines = [json.loads(line) for line in (run_dir / "history.jsonl").read_text().splitlines()]
    return sorted(e["pid"] for e in lines if e.get("type") == "worker_start")


@pytest.mark.integration
def test_a_runs_workers_are_forked_and_its_server_ended_by_pid(tmp_path, watched):
    import leasecheck
    result = leasecheck.run(lease="token-cas", time_limit="2s", workers=3,
                            results_dir=str(tmp_path / "results"))
    assert result.valid is True
    (server,) = watched["servers"]
    assert server.proc.returncode == 0 and not Path(f"/proc/{server.pid}").exists()
    workers = watched["spawned"]
    assert len(workers) == 3 and all(isinstance(w, Forked) for w in workers)
    assert all(w.returncode == 0 for w in workers)            # each reaped, its own exit code known
    run_dir = Path(result.run_dir)
    assert _started_pids(run_dir) == sorted(w.pid for w in workers)
    assert (run_dir / "workers.log").read_text() == ""


@pytest.mark.integration
def test_a_failed_run_still_ends_its_server_and_workers(tmp_path, watched, monkeypatch):
    import leasecheck
    from leasecheck.harness.run.runner import Run

    def broken(self):
        raise RuntimeError("broken on purpose")
    monkeypatch.setattr(Run, "_schedule", broken)      # after the workers started
    with pytest.raises(RuntimeError, match="broken on purpose"):
        leasecheck.run(lease="token-cas", time_limit="2s", workers=2,
                       results_dir=str(tmp_path / "results"))
    (server,) = watched["servers"]
    assert server.proc.returncode is not None and not Path(f"/proc/{server.pid}").exists()
    assert len(watched["spawned"]) == 2
    assert all(w.returncode is not None and not Path(f"/proc/{w.pid}").exists() for w in watched["spawned"])


@pytest.mark.integration
def test_worker_start_exec_gives_each_worker_its_own_popen(tmp_path, watched, monkeypatch):
    import leasecheck
    monkeypatch.setenv("LEASECHECK_WORKER_START", "exec")
    result = leasecheck.run(lease="token-cas", time_limit="2s", workers=2,
                            results_dir=str(tmp_path / "results"))
    assert result.valid is True and watched["servers"] == []
    assert len(_started_pids(Path(result.run_dir))) == 2


@pytest.mark.integration
def test_a_worker_the_server_declined_says_why_in_the_runs_workers_log(tmp_path, monkeypatch):
    import leasecheck
    from leasecheck.harness.run import fork_server

    def declines(self, *a, **k):
        self.refused = "declined on purpose"
        return None
    monkeypatch.setattr(fork_server.ForkServer, "spawn", declines)
    result = leasecheck.run(lease="token-cas", time_limit="2s", workers=2, results_dir=str(tmp_path / "results"))
    assert result.valid is True
    log = (Path(result.run_dir) / "workers.log").read_text().splitlines()
    assert log == [f"leasecheck: w{i} started fresh, not forked: declined on purpose" for i in range(2)]


def test_a_process_is_told_from_its_command_line_and_its_parents(server, tmp_path):
    """The server and the workers it forks share one command line; the parent tells them apart."""
    w = _spawn(server, tmp_path, "sleep")
    assert w.stdout.readline() == b"ready\n"
    try:
        cmd = lambda pid: Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
        assert forked_role(cmd(server.pid), cmd(os.getpid())) == "server"
        assert forked_role(cmd(w.pid), cmd(server.pid)) == "worker"
        assert forked_role(cmd(os.getpid()), "") is None
    finally:
        w.kill()
        w.wait(30)
