"""A command's fork workers that map one file (a dataset's np.memmap, safetensors shards) and unmap it as they end:
their exit reports carry the file pages they still mapped (RssFile), so the file is not counted once per worker."""

import sys

import pytest
from inner_session import rows

MiB = 2**20
FILE_MIB = 64
SLACK = 12 * MiB  # a worker's own pages written after fork (tests/unit/test_tree.py)

WORKERS = '''
import mmap, multiprocessing as mp, time

def read(path, barrier):
    with open(path, "rb") as fh:
        view = mmap.mmap(fh.fileno(), 0, prot=mmap.PROT_READ)
    sum(view[::4096])
    barrier.wait()  # both map all of it now
    time.sleep(0.3)  # read by the polls while it is mapped
    view.close()  # unmapped, then gone at once: its exit report is its last window

if __name__ == "__main__":
    with open("shard.bin", "wb") as fh:
        fh.write(b"\\x01" * (FILE_MIB << 20))
    ctx = mp.get_context("fork")
    barrier = ctx.Barrier(2)
    procs = [ctx.Process(target=read, args=("shard.bin", barrier)) for _ in range(2)]
    for p in procs:
        p.start()
    for p in procs:
        p.join()
'''.replace("FILE_MIB", str(FILE_MIB))


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the tree is read through /proc")
def test_a_file_two_workers_of_a_command_map_is_not_counted_once_per_worker(pytester, monkeypatch):
    monkeypatch.delenv("CI", raising=False)
    pytester.makeini("[pytest]\ngpu_budget_preload =\n")
    pytester.makepyfile(workers=WORKERS, test_mem='''
        import sys
        import pytest
        from gpu_budget import Scenario

        @pytest.mark.gpu_budget(ram="2 GiB")
        def test_workers(gpu_budget):
            gpu_budget.measure(Scenario(name="w", command=[sys.executable, "workers.py"]))
    ''')
    pytester.runpytest_subprocess("-p", "no:randomly", "--gpu-budget", "--gpu-budget-json=r.json").assert_outcomes(passed=1)
    row = rows(pytester)["test_workers"]
    tree = row["phases"]["run"]["tree"]
    workers = [d for d in tree["detail"] if not d["whole"]]
    assert len(workers) == 2 and all(d["reported"] for d in workers), tree
    assert all(d["hwm"] > FILE_MIB * MiB for d in workers), tree  # each mapped the whole file
    assert sum(d["private_peak"] for d in workers) <= FILE_MIB * MiB + 2 * SLACK, tree
