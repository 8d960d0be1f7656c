"""S1 with DataLoader workers, its dataset held in memory as Python objects: the worker blow-up.

The runner holds the mapped clips as `Dataset.to_list()` gives them (a list of
dicts of float lists, what a hand-written torch Dataset holds) and trains with
4 DataLoader workers (the platform's start method: fork on Linux before Python
3.14). A forked worker that reads a clip writes the refcount of each of its
floats, so those pages are copied into that worker: over an epoch the workers
together copy about the whole dataset. None of it is in the main process's
VmHWM, which is all the gate read before it read the process tree.

Tiny budget: what the gate measured of this run's main process before it read
the tree (under the gate's `-n 2`, one torch thread per child, steady allocator,
this machine), plus 16 MiB per worker for what a worker holds of its own without
copying the dataset (a forked worker's own pages, its prefetched batches: what
the workers of the shared-memory and lazy-loading runs added). So a budget that
the main process alone passes, and the workers' copies break. The measured
peaks, main process and tree, are in FINDINGS.md.

Tolerance 0.5 % + 9 MiB, wider than the default: the tree figure of the
as-reported run spreads more from run to run than the main process's: batches
in flight between a worker and the main process at a phase's end count on
whichever side holds them, so the tree figure moves with timing; and the live
tensor bytes, gated beside it, move by whole clips in flight. The tiny default
is set at no less than twice the widest spread (benchmarks/RESULTS.md, section
4); this one at twice the spread of each gated figure over the fresh sessions
of section 5d (benchmarks/results/stored_spread.json holds each session's tree
and tensor bytes), and the +2 % that section plants, which the 2 % tolerance
this case had let through, fails it (tests/integration/test_memtests_planted.py).

The fixes: lazy loading from disk (lazy_data: each worker decodes the clips it
is asked for) and shared memory (shared_memory: one float32 tensor the workers
read views of) keep the workers' copies out; fewer workers (fewer_workers: one)
does not under fork, since one worker still reads, and copies, every clip.

Per device: the budget is a CPU host's main process plus its workers. On a
CUDA host the main process also holds the CUDA runtime's host memory, and the
GPU image's import floor is its own, so the tiny budget does not apply there
(measured on an H100: docs/gpu-results.md); the rows are gated by their
baselines, and the workers' copies are checked by their share of the tree.
"""

import pytest
from s1_wav2vec2.scenarios import WORKERS

BUDGET = {"ram": {"tiny": "975 MiB"}, "origin": "measured-main", "tolerance": {"rel": 0.005, "abs": "9 MiB"},
          "cuda": {"ram": None, "expect": None}}  # see "Per device"
MiB = 2**20

FIXES = {  # fix -> (a fact that shows the fix took effect, the verdict expected against the budget)
    "fewer_workers": (lambda i: i["dataloader_workers"] == 1, "over-budget"),
    "lazy_data": (lambda i: i["dataset_materialised_bytes"] == 0 and "dataset_held_as" not in i, None),
    "shared_memory": (lambda i: i["dataset_held_as"] == "SharedClips", None),
}
CASES = {fix: WORKERS.with_fixes(fix) for fix in FIXES}  # validated at collection


def _workers_added(row) -> float:
    return (row.peaks.ram_tree - row.peaks.ram) / MiB


@pytest.mark.gpu_budget(**BUDGET, expect="over-budget")
def test_as_reported(gpu_budget):
    row = gpu_budget.measure(WORKERS, label="as-reported")
    info = row.info
    assert info["dataloader_workers"] == 4 and info["dataloader_start"] == info["start_method"] == "fork"
    if gpu_budget.budget.ram is not None:  # a CPU host ("Per device")
        # what the gate saw before it read the tree: within the budget, the blow-up unseen
        assert row.peaks.ram <= gpu_budget.budget.ram
    # each clip is read by one worker an epoch (train and eval): together the workers copy about all of it
    held = info["dataset_held_bytes"] / MiB
    assert _workers_added(row) >= 0.75 * held, (_workers_added(row), held)


@pytest.mark.parametrize("fix", list(FIXES))
@pytest.mark.gpu_budget(**BUDGET)
def test_fix(gpu_budget, fix):
    took_effect, expect = FIXES[fix]
    row = gpu_budget.measure(CASES[fix], label=fix, expect=expect if gpu_budget.budget.ram is not None else None)
    assert took_effect(row.info), row.info


@pytest.mark.gpu_budget_probe  # unjudged: no budget marker, since none is judged
def test_start_method(gpu_budget):
    """Spawned workers (macOS's default; Python 3.14's forkserver on Linux does the same) each unpickle the whole
    dataset and import their own torch: every worker holds a full copy, where forked ones copy what they read."""
    workers = 2

    def probe(start: str):
        m = gpu_budget.peak(WORKERS.with_params(dataloader_workers=workers, dataloader_start=start))
        assert m.ok, m.error
        assert m.info["dataloader_start"] == start
        return m

    fork, spawn = probe("fork"), probe("spawn")
    held = round(spawn.info["dataset_held_bytes"] / MiB, 1)
    added = {name: _workers_added(m) for name, m in (("fork", fork), ("spawn", spawn))}
    gpu_budget.note(WORKERS, f"{workers} workers, dataset held in memory {held} MiB: the workers add "
                    + ", ".join(f"{name} {mib:.1f} MiB" for name, mib in added.items())
                    + f" to the main process's {spawn.peaks.ram / MiB:.1f} MiB (tree {spawn.peaks.ram_tree / MiB:.1f} "
                    f"MiB spawned, {fork.peaks.ram_tree / MiB:.1f} MiB forked)",
                    workers=workers, held_mib=held, added_mib={k: round(v, 1) for k, v in added.items()},
                    tree_mib={"fork": round(fork.peaks.ram_tree / MiB, 1), "spawn": round(spawn.peaks.ram_tree / MiB, 1)},
                    main_mib={"fork": round(fork.peaks.ram / MiB, 1), "spawn": round(spawn.peaks.ram / MiB, 1)})
    assert added["spawn"] >= workers * held  # every spawned worker holds the whole dataset
    assert added["fork"] < added["spawn"] - held  # forked ones share what they do not read
