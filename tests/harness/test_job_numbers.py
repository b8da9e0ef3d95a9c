"""``JobNumbers``: the run's jobs numbered across processes and threads, each number once."""
import os
import threading

from leasecheck.harness.run.job_numbers import JobNumbers


def test_slots_in_many_processes_and_threads_never_share_a_number(tmp_path):
    path = tmp_path / "job-numbers"
    path.write_bytes(b"")
    out = tmp_path / "taken"
    out.mkdir()
    children = []
    for p in range(4):
        pid = os.fork()
        if pid == 0:           # a worker: three slots, each its own JobNumbers, each in a thread
            try:
                taken: list[list[int]] = [[] for _ in range(3)]

                def slot(mine: list[int]) -> None:
                    numbers = JobNumbers(path)
                    mine.extend(numbers() for _ in range(500))
                    numbers.close()
                threads = [threading.Thread(target=slot, args=(t,)) for t in taken]
                for t in threads:
                    t.start()
                for t in threads:
                    t.join()
                (out / str(p)).write_text(" ".join(str(n) for t in taken for n in t))
            finally:
                os._exit(0)
        children.append(pid)
    for pid in children:
        assert os.waitpid(pid, 0)[1] == 0
    numbers = [int(n) for p in range(4) for n in (out / str(p)).read_text().split()]
    assert sorted(numbers) == list(range(4 * 3 * 500))      # every number once, none skipped
    assert path.stat().st_size == 4 * 3 * 500


def test_a_slots_own_numbers_rise(tmp_path):
    numbers = JobNumbers(tmp_path / "job-numbers")     # created when missing
    other = JobNumbers(tmp_path / "job-numbers")
    assert [numbers(), other(), numbers()] == [0, 1, 2]
