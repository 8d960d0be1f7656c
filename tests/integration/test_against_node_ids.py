"""`--gpu-budget-against=REF` given node ids (`test_mem.py::test_new`): a test added since REF, named so, is new at
head, as a test file added since REF is; the base session is not a usage error that fails the run."""

import json

from git_project import CASE, RUNNERS, commit, start_repo

NEW = '''

@pytest.mark.gpu_budget(ram="2 GiB")
def test_new(gpu_budget):
    gpu_budget.measure(Scenario(name="new", run="runners:run"))
'''


def test_a_node_id_of_a_test_added_since_ref_is_new_and_its_neighbours_deselected_at_base(pytester, monkeypatch,
                                                                                           tmp_path_factory):
    """Before: "ERROR: gpu-budget against: the base session at ... ended with exit code 4; ... ERROR: not found:
    .../test_mem.py::test_new", exit code 1: the base held the file, not the test."""
    monkeypatch.setenv("TMPDIR", str(tmp_path_factory.mktemp("against-tmp")))
    top = start_repo(pytester, monkeypatch, {"runners.py": RUNNERS.format(mib=8), "test_mem.py": CASE})
    commit(top, "base")
    (top / "test_mem.py").write_text(CASE + NEW)
    commit(top, "a new test in a file the base holds")
    result = pytester.runpytest_subprocess("--gpu-budget", "--gpu-budget-against=HEAD~1", "--gpu-budget-json=pair.json",
                                           "test_mem.py::test_new")
    assert result.ret == 0, result.stdout.str() + result.stderr.str()
    result.stdout.fnmatch_lines(["*test_mem.py::test_new*ram_tree*-*MiB*new*",
                                 "*gpu-budget against HEAD~1: 1 new; passed*"])
    report = json.loads((top / "pair.json").read_text())
    assert [c["nodeid"] for c in report["cases"]] == ["test_mem.py::test_new"]  # test_fn deselected at base
