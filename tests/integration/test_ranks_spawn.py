"""Ranks a script starts itself (torch.multiprocessing.spawn), with no launcher's RANK in their environment.

The tree tells ranks apart by RANK, so such ranks would be gated as one
process: the whole node's figure under a budget meant for each rank, and rank
0's phase marks unheard. The case fails saying so and how to tell them apart;
done so (RANK set in each process before init_process_group), each rank gets
its own figure. Each rank imports torch: a few seconds per launch.
"""

import textwrap

from inner_session import rows

MiB = 2**20

SPAWN = '''
import os, sys, time
import torch.distributed as dist
import torch.multiprocessing as mp
from gpu_budget import phase, step

def worker(rank, sizes, store):
    if os.environ.get("SET_RANK"):
        os.environ["RANK"] = str(rank)
    dist.init_process_group("gloo", init_method=f"file://{store}", rank=rank, world_size=2)
    phase("load")
    held = b"\\x01" * (int(sizes[rank]) << 20)
    for _ in range(2):
        dist.barrier()
        step()
    dist.barrier()
    dist.destroy_process_group()

if __name__ == "__main__":
    mp.spawn(worker, args=(sys.argv[2:], sys.argv[1]), nprocs=2)
'''


def test_spawned_ranks_without_a_rank_fail_saying_how_and_with_one_each_gets_its_figure(pytester, monkeypatch):
    monkeypatch.delenv("CI", raising=False)
    pytester.makeini("[pytest]\ngpu_budget_preload =\n")
    pytester.makepyfile(spawn=SPAWN)
    pytester.makepyfile(test_mem=textwrap.dedent('''
        import sys
        import pytest
        from gpu_budget import Scenario

        def spawn(tmp_path, **env):
            return Scenario(name="spawn", command=[sys.executable, "spawn.py", str(tmp_path / "store"), "40", "120"],
                            env=env)

        @pytest.mark.gpu_budget(ram="2 GiB")
        def test_bare(gpu_budget, tmp_path):
            gpu_budget.measure(spawn(tmp_path))

        @pytest.mark.gpu_budget(ram="2 GiB")
        def test_told(gpu_budget, tmp_path):
            gpu_budget.measure(spawn(tmp_path, SET_RANK="1"))
    '''))
    result = pytester.runpytest_subprocess("-p", "no:randomly", "--gpu-budget", "--gpu-budget-json=r.json")
    result.assert_outcomes(failed=1, passed=1)
    by = rows(pytester)
    bare = by["test_bare"]["message"]
    assert "2 process(es) joined a process group of 2, but none ran with a launcher's RANK in its environment " \
           "(torch.multiprocessing.spawn starts them so): the figures would be the whole node's" in bare, bare
    assert 'set os.environ["RANK"] = str(rank) in each process before it calls' in bare, bare
    told = by["test_told"]
    ranks = {r["rank"]: r for r in told["ranks"]}
    assert sorted(ranks) == [0, 1], told["ranks"]
    gap = ranks[1]["peaks"]["ram_tree"] - ranks[0]["peaks"]["ram_tree"]
    assert 76 * MiB <= gap <= 84 * MiB, ranks  # rank 1 holds 80 MiB more: each figure is its own rank's
    assert told["info"]["phase_marks"] == 3, told["info"]  # rank 0's marks heard
