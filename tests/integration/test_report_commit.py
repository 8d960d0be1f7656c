"""A session's JSON report names the commit it measured and whether the tree was dirty, read at the session's start."""

import json
import subprocess


def git(folder, *args):
    return subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=folder, check=True,
                          capture_output=True, text=True).stdout.strip()


def test_the_report_names_the_measured_commit_and_whether_the_tree_was_dirty(project):
    pytester = project('''
        @pytest.mark.gpu_budget(ram="1 GiB")
        def test_a(gpu_budget):
            gpu_budget.measure(Scenario(name="a", run="runners:alloc", params={"mib": 8}))
    ''')
    (pytester.path / ".gitignore").write_text("runpytest-*\nstdout\nstderr\n")  # what pytester writes beside it
    git(pytester.path, "init", "-q")
    git(pytester.path, "add", "-A")
    git(pytester.path, "commit", "-q", "-m", "the tests")
    head = git(pytester.path, "rev-parse", "HEAD")

    def run() -> dict:
        result = pytester.runpytest_subprocess("-p", "no:randomly", "-p", "no:cacheprovider", "--gpu-budget",
                                               f"--gpu-budget-json={pytester.path.parent / 'r.json'}")
        result.assert_outcomes(passed=1)
        return json.loads((pytester.path.parent / "r.json").read_text())

    first = run()  # clean: read before the session recorded its baseline (a new file in the tree)
    assert first["git"] == {"commit": head, "dirty": False} and len(first["results"]) == 1
    (pytester.path / "runners.py").write_text((pytester.path / "runners.py").read_text() + "\n# edited\n")
    assert run()["git"] == {"commit": head, "dirty": True}


def test_a_tree_outside_git_records_none(project, monkeypatch):
    pytester = project('''
        @pytest.mark.gpu_budget(ram="1 GiB")
        def test_a(gpu_budget):
            gpu_budget.measure(Scenario(name="a", run="runners:alloc", params={"mib": 8}))
    ''')
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(pytester.path.parent))  # no repository above it
    result = pytester.runpytest_subprocess("-p", "no:randomly", "--gpu-budget", "--gpu-budget-json=r.json")
    result.assert_outcomes(passed=1)
    assert json.loads((pytester.path / "r.json").read_text())["git"] is None
