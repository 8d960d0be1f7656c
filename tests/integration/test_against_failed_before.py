"""`--gpu-budget-against=REF` where a test fails before any case of it is measured (an exception before measure(), a
fixture's error): no row says so, yet pytest failed the test. At head it fails the run, as the plain gate fails it; at
base it is an error at base, named, not a case new at head."""

import json

from git_project import commit
from test_against_histories import case, cases, module, project  # noqa: F401 (the fixture)


def against(pytester, ref: str = "main~1"):
    """One --against run from the working folder, its report in pair.json (read by `cases`)."""
    return pytester.runpytest_subprocess("--gpu-budget", f"--gpu-budget-against={ref}", "--gpu-budget-json=pair.json")


RAISES = '''

@pytest.mark.gpu_budget(ram="2 GiB")
def test_{name}(gpu_budget):
    raise RuntimeError("{why}")
'''


def test_a_head_test_failing_before_measure_fails_the_run_naming_why(project):  # noqa: F811
    """test_x is measured at base and raises before measure() at head; test_y, new at head, raises too. Before: x read
    "removed: at base only: not collected at head", y was not listed at all, and the run passed (exit 0)."""
    (project.path / "test_a.py").write_text(module(case("x", 8), case("ok", 8)))
    commit(project.path, "base")
    (project.path / "test_a.py").write_text(module(case("ok", 8)) + RAISES.format(name="x", why="broken at head")
                                            + RAISES.format(name="y", why="new and broken"))
    commit(project.path, "x raises before measure(), y is new and raises")
    result = against(project)
    out = result.stdout.str()
    assert result.ret == 1, out
    said = "at head: its test failed with no case of it measured: RuntimeError"
    result.stdout.fnmatch_lines([f"failed: test_a.py::test_x: {said}: broken at head",
                                 f"failed: test_a.py::test_y: {said}: new and broken",
                                 "*gpu-budget against main~1: 1 pass, 2 failed; FAILED*"])
    assert "removed" not in out and "gate failed at head" not in out  # each case says it: not said twice
    found = cases(project)
    assert [(n, c["status"], c["passed"]) for n, c in found.items()] == [
        ("test_a.py::test_ok", "pass", True), ("test_a.py::test_x", "failed", False), ("test_a.py::test_y", "failed", False)]
    head = [r for r in json.loads((project.path / "pair.json").read_text())["runs"] if r["side"] == "head"]
    assert set(head[0]["failed_tests"]) == {"test_a.py::test_x", "test_a.py::test_y"}, head[0]


def test_a_base_test_failing_before_measure_is_an_error_at_base_not_new(project):  # noqa: F811
    """Before: "new: at head only: judged on its budget alone", though the test was there at base and failed."""
    (project.path / "test_a.py").write_text(module(RAISES.format(name="x", why="broken at base")))
    commit(project.path, "base: x raises before measure()")
    (project.path / "test_a.py").write_text(module(case("x", 64)))
    commit(project.path, "fix x")
    result = against(project)
    assert result.ret == 0, result.stdout.str()
    result.stdout.fnmatch_lines(["*test_a.py::test_x*ram_tree*-*MiB*error at base*",
                                 ("error at base: test_a.py::test_x: at base its test failed with no case of it "
                                  "measured: RuntimeError: broken at base; head judged on its budget alone")])
    x = cases(project)["test_a.py::test_x"]
    assert (x["status"], x["passed"]) == ("error at base", True) and x["figures"][0]["head"], x
