"""The optional compiled checker (setup.py's mypyc build) and its pure-Python switch.

The same source runs compiled or not; ``LEASECHECK_PURE_PYTHON=1`` makes a process load the
``.py`` files even where the compiled modules sit beside them. The audit reader's split of a
command line (what its regex would match, without the regex) must give the regex's groups."""
import os
import subprocess
import sys
from pathlib import Path

import pytest

from leasecheck import _pure

from leasecheck.checkers.read import audit

ROOT = Path(__file__).resolve().parents[2]

LINES = ['1795951565.822380 [0 127.0.0.1:60120] "SET" "k" "t" "NX" "PX" "1000"\n', '1.2.3 [0 a] "X"\n',
         '1. [0 a] "X"\n', '.5 [0 a] "X"\n', '1.5 [0 a]] "X"\n', '1.5 [0 ] "X"\n', '1.5 [x a] "X"\n',
         '1.5 [0 a] \n', '1.5 [0 a] "X"', '1.5 [0 a]  "X"\n', '1.5 [0 a] "X\r"\n', '1.5 [00 lua] "get" "a b"\n',
         '1.5  [0 a] "X"\n', '1.5 [0 a] "X" \n', '1.5 [0 a] "X"\n\n', 'OK\n', '# end\n', '1.5 [0 a]\n']


@pytest.mark.parametrize("line", LINES)
def test_the_split_of_a_command_line_gives_the_regex_groups(line):
    m = audit._LINE.match(line)
    assert audit._command_head(line) == (list(m.groups()) if m else None)


@pytest.mark.parametrize("line", ['١.5 [0 a] "X"\n', '1.5 [0 a] "é"\n'])
def test_a_line_that_is_not_ascii_is_left_to_the_regex(line):
    assert audit._command_head(line) is None
    records = list(audit.AuditStream(text="OK\n" + line + "# end\n"))
    m = audit._LINE.match(line)
    assert [r.addr for r in records] == ([m.group(3)] if m else [])


def _loaded_from(env_value):
    env = {k: v for k, v in os.environ.items() if k != "LEASECHECK_PURE_PYTHON"}
    if env_value is not None:
        env["LEASECHECK_PURE_PYTHON"] = env_value
    code = ("import leasecheck.checkers.model.join as j, leasecheck.checkers.read.history as h, "
            "leasecheck.workloads.claim_loop as c, leasecheck.harness.record.history as w; "
            "print(j.__file__); print(h.__file__); print(c.__file__); print(w.__file__)")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True,
                         check=True).stdout.split()
    return out


def test_leasecheck_pure_python_loads_the_source_files():
    assert all(f.endswith(".py") for f in _loaded_from("1"))


def test_without_it_the_compiled_modules_are_used_where_they_are_built():
    # the checker's and the workers' alike: one build, all of it or none
    built = list((ROOT / "checkers" / "model").glob("join.*.so"))
    assert bool(built) == bool(list((ROOT / "workloads").glob("claim_loop.*.so")))
    files = _loaded_from(None)
    assert len(files) == 4 and all(f.endswith(".py") for f in files) == (not built), files


def test_a_compiled_module_older_than_its_source_is_stale(tmp_path):
    (tmp_path / "read").mkdir()
    src, ext = tmp_path / "read" / "audit.py", tmp_path / "read" / "audit.cpython-311-x86_64-linux-gnu.so"
    src.write_text("x = 1\n")
    ext.write_bytes(b"")
    os.utime(src, (1_000, 1_000))
    os.utime(ext, (2_000, 2_000))
    assert _pure.stale([tmp_path], group_dir=tmp_path) == []
    os.utime(src, (3_000, 3_000))        # edited (or pulled) after the build
    assert _pure.stale([tmp_path], group_dir=tmp_path) == [str(src)]
    group = tmp_path / "compiled__mypyc.cpython-311-x86_64-linux-gnu.so"   # the code, rebuilt since
    group.write_bytes(b"")
    os.utime(group, (4_000, 4_000))
    assert _pure.stale([tmp_path], group_dir=tmp_path) == []
    # the other group, left as it was by that build (none of its modules changed): the newer counts
    worker = tmp_path / "worker__mypyc.cpython-311-x86_64-linux-gnu.so"
    worker.write_bytes(b"")
    os.utime(worker, (2_500, 2_500))
    assert _pure.groups(tmp_path) == [group, worker]
    assert _pure.stale([tmp_path], group_dir=tmp_path) == []
    os.utime(src, (5_000, 5_000))        # edited again, not rebuilt: newer than both
    assert _pure.stale([tmp_path], group_dir=tmp_path) == [str(src)]
    # the C extension built with the groups: its source edited after its build is stale too
    c_src, c_ext = tmp_path / "_linewrite.c", tmp_path / "_linewrite.cpython-311-x86_64-linux-gnu.so"
    c_src.write_text("/* */\n")
    c_ext.write_bytes(b"")
    os.utime(c_src, (6_000, 6_000))
    os.utime(c_ext, (7_000, 7_000))
    assert _pure.stale([tmp_path], group_dir=tmp_path) == [str(src)]
    os.utime(c_src, (8_000, 8_000))
    assert _pure.stale([tmp_path], group_dir=tmp_path) == [str(c_src), str(src)]


def test_the_checkers_and_the_workers_modules_are_two_groups_that_import_nothing_of_each_other():
    # setup.py's groups: a module's compiled code is in its group's extension; a group calling a
    # module of the other would reach it through Python calls, and the workers' group is kept
    # small so that what a worker runs per command stays close together (setup.py)
    import ast
    tree = ast.parse((ROOT / "setup.py").read_text())
    values = {t.id: node.value for node in tree.body if isinstance(node, ast.Assign)
              for t in node.targets if isinstance(t, ast.Name)}
    checker, worker = ast.literal_eval(values["CHECKER"]), ast.literal_eval(values["WORKER"])
    assert not set(checker) & set(worker)
    names = [group.elts[0].value for group in values["GROUPS"].elts]      # ("leasecheck.compiled", CHECKER) ...
    assert [name.rsplit(".", 1)[1] + "__mypyc" for name in names] == list(_pure.GROUPS)

    def module(path: str) -> str:
        return "leasecheck." + path[:-3].replace("/", ".")

    for mine, theirs in ((checker, worker), (worker, checker)):
        others = {module(p) for p in theirs}
        for path in mine:
            imported = set()
            for node in ast.walk(ast.parse((ROOT / path).read_text())):
                if isinstance(node, ast.ImportFrom) and node.module:
                    imported |= {node.module} | {f"{node.module}.{a.name}" for a in node.names}
                elif isinstance(node, ast.Import):
                    imported |= {a.name for a in node.names}
            assert not imported & others, (path, imported & others)
