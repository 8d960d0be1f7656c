"""Case studies live beside their tests (memtests/<scenario>/): pytest puts memtests/ on sys.path, so the
forkserver preloads their runners and the measured children import them, serial and under xdist.

A preload that fails to import is skipped silently (multiprocessing's forkserver
swallows the ImportError), which would cost every child the import; so the
runner below records the process that imported it, and a child says whether
that was the forkserver (an earlier pid) or itself.
"""

import pytest

RUNNER = '''
import os

IMPORTED_IN = os.getpid()  # the forkserver, when the preload imported this module


def run(ctx):
    ctx.meter.start("load")
    held = b"\\\\x01" * (8 << 20)
    ctx.meter.stop()
    return {"preloaded": IMPORTED_IN != os.getpid(), "held": len(held)}
'''

SCENARIOS = '''
from gpu_budget import Fix, Scenario

OWN = Fix("case_study_own_fix", "data", "a fix only this case study has")
CASE = Scenario(name="case", run="my_case.runner:run", params={"n": 1}, supports=(OWN, "gc_collect"))
'''

TESTS = '''
import pytest
from my_case.scenarios import CASE


@pytest.mark.gpu_budget(ram="2 GiB")
@pytest.mark.parametrize("n", [1, 2])
def test_case(gpu_budget, n):
    row = gpu_budget.measure(CASE.with_params(n=n).with_fixes("case_study_own_fix"))
    assert row.info["preloaded"] is True
'''


@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["serial", "xdist"])
def test_a_case_study_folder_is_preloaded_by_the_forkserver(pytester, workers, monkeypatch):
    monkeypatch.delenv("CI", raising=False)
    pytester.makeini("[pytest]\ngpu_budget_preload = my_case.runner\n")
    cases = pytester.mkdir("memtests")
    (cases / "my_case").mkdir()
    (cases / "my_case" / "__init__.py").write_text("")
    (cases / "my_case" / "runner.py").write_text(RUNNER)
    (cases / "my_case" / "scenarios.py").write_text(SCENARIOS)
    (cases / "test_my_case.py").write_text(TESTS)
    result = pytester.runpytest_subprocess("-p", "no:randomly", "-p", "no:cacheprovider", "--gpu-budget",
                                           "memtests", *workers)
    result.assert_outcomes(passed=2)


def test_s5_batch_search_is_the_core_boundary_search(monkeypatch):
    """S5's largest-batch search finds every edge of 8..40 with the core's search (no second bisection in the tree):
    at most 9 real runs, 2 when the edge is the middle size, the size above the edge always measured."""
    from pathlib import Path

    monkeypatch.syspath_prepend(str(Path(__file__).resolve().parents[2] / "memtests"))
    from s5_generic_oom.search import largest_batch_within

    for edge in range(7, 41):  # 7: not even the smallest size fits
        found = largest_batch_within(edge, lambda batch: batch, lo=8, hi=40)  # a batch's "peak" is its size
        assert found.batch_size == (edge if edge >= 8 else None)
        assert found.runs <= 9, (edge, found.peaks)
        if 8 <= edge < 40:
            assert found.peaks[edge + 1] > edge
    assert largest_batch_within(24, lambda batch: batch, lo=8, hi=40).runs == 2
    crashed = largest_batch_within(100, lambda batch: None if batch > 30 else batch, lo=8, hi=40)
    assert crashed.batch_size == 30  # a run that crashed counts as not fitting
    with pytest.raises(ValueError, match="lo=9, hi=8"):
        largest_batch_within(1, lambda batch: batch, lo=9, hi=8)


def test_s5_accelerate_search_records_every_try_of_accelerates_own_decorator(monkeypatch):
    """find_batch.py runs accelerate's find_executable_batch_size as it is: from 64, each out-of-memory error (here
    planted: the card's cap is what a CPU cannot have) shrinks the batch by accelerate's factor until one runs;
    every try and error is kept; another error is not swallowed; no batch at all is an answer of None."""
    from pathlib import Path

    import torch

    monkeypatch.syspath_prepend(str(Path(__file__).resolve().parents[2] / "memtests"))
    from s5_generic_oom.find_batch import accelerate_search

    def step(fits: int):
        def run(batch: int) -> None:
            if batch > fits:
                raise torch.OutOfMemoryError(f"CUDA out of memory. Tried to allocate {batch} MiB.")
        return run

    found = accelerate_search(step(30), start=64)
    assert found.tried == [64, 57, 51, 45, 40, 36, 32, 28] and found.batch_size == 28 and found.runs == 8
    assert found.errors == [f"CUDA out of memory. Tried to allocate {b} MiB." for b in found.tried[:-1]]
    assert accelerate_search(step(64), start=64).tried == [64]
    assert accelerate_search(step(0), start=4).batch_size is None  # 4, 3, 2, 1, then accelerate gives up at 0

    def broken(batch: int) -> None:
        raise RuntimeError("shape mismatch")
    with pytest.raises(RuntimeError, match="shape mismatch"):
        accelerate_search(broken, start=64)
