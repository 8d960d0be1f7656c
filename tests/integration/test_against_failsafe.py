"""`--gpu-budget-against=REF` keeps the gate's fail-safe at head: a head session whose measured children saw no GPU
under --gpu-budget-require-gpu, or that measured nothing under CI, fails the run as the plain gate fails, whatever
the verdicts of the cases compared (these machines have no GPU: require-gpu is the fail-safe's own case here)."""

import json

from git_project import commit
from test_against_histories import case, module, project  # noqa: F401 (the fixture)


def test_require_gpu_without_a_gpu_at_head_fails_the_run(project):  # noqa: F811
    """The GPU workflow's against step on a runner whose children see no GPU. Before: "1 pass; passed", exit 0."""
    (project.path / "test_a.py").write_text(module(case("x", 8)))
    commit(project.path, "base")
    (project.path / "notes.txt").write_text("a change that moves no figure\n")
    commit(project.path, "notes")
    result = project.runpytest_subprocess("--gpu-budget", "--gpu-budget-require-gpu", "--gpu-budget-against=main~1",
                                          "--gpu-budget-json=pair.json")
    out = result.stdout.str()
    assert result.ret == 1, out
    result.stdout.fnmatch_lines(["*test_a.py::test_x*ram_tree*pass*",
                                 "gate failed at head: --gpu-budget-require-gpu: the measured children saw no CUDA GPU*",
                                 "gpu-budget against main~1: 1 pass; FAILED"])
    data = json.loads((project.path / "pair.json").read_text())
    assert data["passed"] is False
    assert any("saw no CUDA GPU" in p for p in data["gate_problems"]), data["gate_problems"]


def test_a_head_that_measures_nothing_under_ci_fails_the_run(project, monkeypatch):  # noqa: F811
    """Every memory test deleted at head, under CI. Before: "1 removed; passed", exit 0, where the plain gate fails
    ("no memory-budget test was collected ... the gate measured nothing")."""
    (project.path / "test_a.py").write_text(module(case("x", 8)))
    (project.path / "test_other.py").write_text("def test_plain():\n    pass\n")
    commit(project.path, "base")
    (project.path / "test_a.py").unlink()
    commit(project.path, "drop the memory test")
    monkeypatch.setenv("CI", "true")
    result = project.runpytest_subprocess("--gpu-budget", "--gpu-budget-against=main~1", "--gpu-budget-json=pair.json")
    out = result.stdout.str()
    assert result.ret == 1, out
    result.stdout.fnmatch_lines(["gate failed at head: no memory-budget test was collected*the gate measured nothing",
                                 "gpu-budget against main~1: 1 removed; FAILED"])


def test_a_head_that_measures_nothing_by_hand_still_passes(project):  # noqa: F811
    """Outside CI and without --gpu-budget-require-gpu the fail-safe only warns, in against mode as in a plain gate."""
    (project.path / "test_a.py").write_text(module(case("x", 8)))
    (project.path / "test_other.py").write_text("def test_plain():\n    pass\n")
    commit(project.path, "base")
    (project.path / "test_a.py").unlink()
    commit(project.path, "drop the memory test")
    result = project.runpytest_subprocess("--gpu-budget", "--gpu-budget-against=main~1")
    assert result.ret == 0, result.stdout.str()
    result.stdout.fnmatch_lines(["gpu-budget against main~1: 1 removed; passed"])
