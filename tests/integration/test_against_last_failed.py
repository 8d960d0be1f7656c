"""`--gpu-budget-against=REF --lf`: the base session reads the head's pytest cache, so both sides select the tests
that failed last, and a test the head deselected is not called removed."""

import json

from git_project import CASE, RUNNERS, commit, start_repo

TIGHT = '''

@pytest.mark.gpu_budget(ram="1 MiB")
def test_tight(gpu_budget):
    gpu_budget.measure(Scenario(name="tight", run="runners:run"))
'''


def test_last_failed_selects_the_same_tests_at_base(pytester, monkeypatch, tmp_path_factory):
    """Before: the base, in a worktree with no cache, ran every test, and test_fn (passed last, so deselected at
    head) read "removed: test_mem.py::test_fn: at base only: not collected at head"."""
    monkeypatch.setenv("TMPDIR", str(tmp_path_factory.mktemp("against-tmp")))
    top = start_repo(pytester, monkeypatch, {"runners.py": RUNNERS.format(mib=8), "test_mem.py": CASE + TIGHT})
    commit(top, "base")
    (top / "runners.py").write_text(RUNNERS.format(mib=9))
    commit(top, "head")
    assert pytester.runpytest_subprocess("--gpu-budget").ret == 1  # test_tight over its budget: the last failed
    result = pytester.runpytest_subprocess("--gpu-budget", "--gpu-budget-against=HEAD~1", "--gpu-budget-json=pair.json",
                                           "--lf")
    assert result.ret == 1, result.stdout.str()
    report = json.loads((top / "pair.json").read_text())
    assert {c["nodeid"]: c["status"] for c in report["cases"]} == {"test_mem.py::test_tight": "over-budget"}


def test_with_no_cache_provider_there_is_no_cache_to_copy(pytester, monkeypatch, tmp_path_factory):
    """`-p no:cacheprovider` (the GPU workflow's) registers no `cache_dir`: the run compares as usual. A crash before:
    "ValueError: unknown configuration value: 'cache_dir'"."""
    monkeypatch.setenv("TMPDIR", str(tmp_path_factory.mktemp("against-tmp")))
    top = start_repo(pytester, monkeypatch, {"runners.py": RUNNERS.format(mib=8), "test_mem.py": CASE})
    commit(top, "base")
    (top / "runners.py").write_text(RUNNERS.format(mib=9))
    result = pytester.runpytest_subprocess("--gpu-budget", "--gpu-budget-against=HEAD", "-p", "no:cacheprovider")
    assert result.ret == 0, result.stdout.str() + result.stderr.str()
    result.stdout.fnmatch_lines(["*gpu-budget against HEAD: 1 pass; passed*"])
