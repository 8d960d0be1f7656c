"""Where memory snapshots are kept (report/artifacts.py, session/recording.py): two failing CUDA cases whose file
names would coincide keep one each (before, tests/a/test_same.py::test_over and tests/b/test_same.py::test_over were
both kept as test_same__test_over.pickle: the second replaced the first, and both rows named the one file left, b's
snapshot), and a snapshot that cannot be kept is said to be lost, with why."""

import json
import pickle
from pathlib import Path

TEST = '''
import pytest
from gpu_budget import Scenario


@pytest.mark.gpu_budget(vram="10 GiB")
def test_over(gpu_budget):
    gpu_budget.measure(Scenario(name="gpu", run="runners:gpu", params={{"gib": {gib}}}))
'''


def test_namesake_modules_keep_a_snapshot_each(fake_cuda, pytester):
    fake_cuda("")
    pytester.path.joinpath("test_mem.py").unlink()
    for folder, gib in (("a", 12), ("b", 14)):
        (pytester.path / "tests" / folder).mkdir(parents=True)
        (pytester.path / "tests" / folder / "test_same.py").write_text(TEST.format(gib=gib))
    result = pytester.runpytest_subprocess("-p", "no:randomly", "-p", "no:cacheprovider", "-p", "no:xdist",
                                           "--import-mode=importlib", "--gpu-budget", "--gpu-budget-json=out/report.json",
                                           "tests")
    result.assert_outcomes(failed=2)
    rows = {r["nodeid"]: r for r in json.loads((pytester.path / "out" / "report.json").read_text())["results"]}
    kept = {nodeid: row["snapshot"] for nodeid, row in rows.items()}
    assert len(set(kept.values())) == 2, kept
    for path in kept.values():
        assert pickle.loads(Path(path).read_bytes())["recorded"] == ["all"]
    folder = pytester.path / "out" / "gpu-budget-snapshots"
    assert len(list(folder.iterdir())) == 2


def test_a_snapshot_that_cannot_be_kept_says_why(fake_cuda):
    """A file where the snapshots folder should be (or a full disk): before, the second, recording run happened and
    its snapshot was dropped without a word, the row and the terminal silent on it."""
    pytester = fake_cuda('''
        @pytest.mark.gpu_budget(vram="10 GiB")
        def test_over(gpu_budget):
            gpu_budget.measure(S(12))
    ''')
    (pytester.path / "out").mkdir()
    (pytester.path / "out" / "gpu-budget-snapshots").write_text("a file")
    result = pytester.runpytest_subprocess("-p", "no:randomly", "-p", "no:cacheprovider", "-p", "no:xdist",
                                           "--gpu-budget", "--gpu-budget-json=out/report.json")
    result.assert_outcomes(failed=1)
    (row,) = json.loads((pytester.path / "out" / "report.json").read_text())["results"]
    assert "snapshot" not in row and row["snapshot_run"] is not None
    assert "memory snapshot not kept: " in row["message"] and "gpu-budget-snapshots" in row["message"], row["message"]
    result.stdout.fnmatch_lines(["*test_over: *memory snapshot not kept: *gpu-budget-snapshots*"])
