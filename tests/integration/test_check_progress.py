"""`leasecheck check` shows a progress bar on a terminal, and none in a log."""
import os
import pty
import shutil
import subprocess
import sys
from pathlib import Path

DATA = Path(__file__).resolve().parents[1] / "checkers" / "data"
BAR = "checking history + audit"


def _in_a_terminal(args: list[str]) -> tuple[int, str]:
    pid, fd = pty.fork()
    if pid == 0:     # the child: the real command line, on the pseudo-terminal
        os.environ["COLUMNS"] = "120"
        os.execv(sys.executable, [sys.executable, "-m", "leasecheck", *args])
    out = b""
    while True:
        try:
            chunk = os.read(fd, 65536)
        except OSError:      # the child closed the terminal
            break
        if not chunk:
            break
        out += chunk
    _, status = os.waitpid(pid, 0)
    os.close(fd)
    return os.waitstatus_to_exitcode(status), out.decode(errors="replace")


def test_check_shows_progress_on_a_terminal_and_not_in_a_log(tmp_path):
    run = tmp_path / "run"
    shutil.copytree(DATA / "incident-token-cas-ok", run)
    code, screen = _in_a_terminal(["check", str(run)])
    assert code == 0 and BAR in screen and "VALID" in screen
    p = subprocess.run([sys.executable, "-m", "leasecheck", "check", str(run)], capture_output=True, text=True)
    assert p.returncode == 0 and "VALID" in p.stdout and BAR not in p.stdout + p.stderr
