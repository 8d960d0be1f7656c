"""Two failing CUDA cases whose file names would coincide keep a memory snapshot each (report/artifacts.py). Before,
tests/a/test_same.py::test_over and tests/b/test_same.py::test_over were both kept as test_same__test_over.pickle:
the second replaced the first, and both rows named the one file left, b's snapshot."""

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
