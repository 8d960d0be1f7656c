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


@pytest.mark.parametrize("body,said", [
    ("import time\ntime.sleep(600)\n", "did not start the child within 33 s"),  # the timeout + START_GRACE
    ("import os, signal\nos.kill(os.getpid(), signal.SIGSEGV)\n", "ended before it started the child"),
])
def test_a_preload_that_hangs_or_crashes_on_import_fails_its_test_naming_the_preload(project, body, said):
    """The forkserver imports the preload before it forks a child: a hang there would hang the session past any
    --gpu-budget-timeout (the wait for the child's pid is not the child's run), a crash would say only `EOFError`."""
    project.makepyfile(stuck=body)
    project.makeini("[pytest]\ngpu_budget_preload = runners stuck\n")
    result = project.runpytest_subprocess("-p", "no:randomly", "--gpu-budget", "--gpu-budget-timeout=3", timeout=120)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines([f"*the forkserver {said}*gpu_budget_preload*runners stuck*"])


def test_a_module_named_as_the_standard_librarys_is_named_not_the_preload(project):
    """A `re.py` beside the tests, on sys.path through pytest's pythonpath: the forkserver, handed that sys.path,
    imports it in the standard module's place and dies; the failure blamed the preload ("one of those hangs or
    crashes on import"), which imported fine everywhere else."""
    (project.path / "lib").mkdir()
    (project.path / "lib/re.py").write_text("raise ImportError('the project s own re.py')\n")
    project.makeini("[pytest]\npythonpath = lib\n")  # not its rootdir: `python -m pytest` itself would import it
    result = project.runpytest_subprocess("-p", "no:randomly", "--gpu-budget", timeout=120)
    result.assert_outcomes(failed=1)
    said = (f"*the forkserver ended before it started the child*: {project.path / 'lib/re.py'} has the name of a "
            "standard-library module, ahead of the standard library on sys.path*")
    result.stdout.fnmatch_lines([said])
    assert "gpu_budget_preload" not in result.stdout.str()
