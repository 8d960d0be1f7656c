"""A preload module that fails to import in the forkserver is said, not skipped silently: the floor is made without it."""

import json

import pytest


@pytest.fixture
def project(pytester, monkeypatch):
    monkeypatch.delenv("CI", raising=False)
    pytester.makepyfile(runners="def run(ctx):\n    held = b'\\x01' * (8 << 20)\n    return {}\n",
                        broken="raise ImportError('planted: a wheel this host lacks')\n",
                        test_mem='''
import pytest
from gpu_budget import Scenario


@pytest.mark.gpu_budget(ram="2 GiB")
def test_one(gpu_budget):
    gpu_budget.measure(Scenario(name="one", run="runners:run"))
''')
    return pytester


def test_a_failed_preload_import_is_named_and_in_the_fingerprint(project):
    project.makeini("[pytest]\ngpu_budget_preload = runners broken\n")
    result = project.runpytest_subprocess("-p", "no:randomly", "--gpu-budget", "--gpu-budget-json=r.json")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["preload: broken failed to import in the forkserver*"])
    hardware = json.loads((project.path / "r.json").read_text())["hardware"]
    assert hardware["preload"] == "runners broken(not-imported)", hardware["preload"]


def test_a_preload_that_imports_says_nothing(project):
    project.makeini("[pytest]\ngpu_budget_preload = runners\n")
    result = project.runpytest_subprocess("-p", "no:randomly", "--gpu-budget", "--gpu-budget-json=r.json")
    result.assert_outcomes(passed=1)
    assert "failed to import" not in result.stdout.str()
    assert json.loads((project.path / "r.json").read_text())["hardware"]["preload"] == "runners"
