"""What runs at once share on disk: their run directories never collide, `results/index.html` is
rewritten whole under a lock by runs ending at once (threads and processes), a run directory
shipped back from a cluster host lands under its own name (or the next free one)."""
import io
import json
import subprocess
import sys
import tarfile
import threading

import pytest

from leasecheck.harness.reports.html import write_index
from leasecheck.harness.run.runner import make_run_dir
from leasecheck.harness.search.cluster import check_spec, unpack
from leasecheck.harness.errors import UsageError
from leasecheck.harness.settings.config import RunConfig
from tests.conftest import ROOT


def test_runs_started_at_once_get_a_directory_each(tmp_path):
    cfg = RunConfig(results_dir=str(tmp_path), lease="naive-del")
    made, barrier = [], threading.Barrier(16)

    def one():
        barrier.wait()
        made.append(make_run_dir(cfg))
    threads = [threading.Thread(target=one) for _ in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(set(made)) == 16
    assert all((d / "history.d").is_dir() for d in made)


def _run(results, n):
    d = results / "naive-del" / f"20261201T0900{n:02d}.000000Z"
    d.mkdir(parents=True)
    (d / "config.json").write_text(json.dumps({"lease": "naive-del"}))
    (d / "results.json").write_text(json.dumps({"valid": False}))
    return d


def test_the_index_written_by_runs_ending_at_once_lists_every_run(tmp_path):
    script = ("import sys; from leasecheck.harness.reports.html import write_index\n"
              "for _ in range(20): write_index(sys.argv[1])\n")
    for n in range(6):
        _run(tmp_path, n)
    procs = [subprocess.Popen([sys.executable, "-c", script, str(tmp_path)], cwd=ROOT) for _ in range(3)]
    threads = [threading.Thread(target=lambda: [write_index(tmp_path) for _ in range(20)]) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert [p.wait(60) for p in procs] == [0, 0, 0]
    page = (tmp_path / "index.html").read_text()
    assert page.rstrip().endswith("</html>")
    assert all(f"20261201T0900{n:02d}" in page for n in range(6))
    assert not list(tmp_path.glob("index.html*.tmp"))        # no writer's temporary file left behind


def _tar(relative: str, text: str) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        data = text.encode()
        info = tarfile.TarInfo(f"{relative}/results.json")
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def test_a_run_from_a_host_lands_under_its_own_name_or_the_next_free_one(tmp_path):
    rel = "naive-del/20261201T090000.000001Z"
    first = unpack(_tar(rel, "a"), rel, tmp_path / "results")
    second = unpack(_tar(rel, "b"), rel, tmp_path / "results")
    assert first == (tmp_path / "results" / rel).resolve()
    assert second.name == "20261201T090000.000002Z" and (second / "results.json").read_text() == "b"
    assert (first / "results.json").read_text() == "a"
    assert (tmp_path / "results" / "latest").resolve() == second
    assert not list((tmp_path / "results").glob(".unpack-*"))
    with pytest.raises(ValueError, match="unexpected name"):
        unpack(_tar("../x/y", "c"), "../x/y", tmp_path / "results")


@pytest.mark.parametrize("spec", ["local:0", "local:", "127.0.0.1:8786", "tcp://127.0.0.1", "ray://x:1"])
def test_a_cluster_spec_of_neither_form_is_refused(spec):
    with pytest.raises(UsageError, match=r"give local:N .* or a scheduler's address, e.g. --cluster tcp://127.0.0.1:8786"):
        check_spec(spec)
    check_spec("local:2")
    check_spec("tcp://127.0.0.1:8786")
