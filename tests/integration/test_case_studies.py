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
