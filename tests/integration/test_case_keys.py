"""Two cases never share a baseline entry: methods of one name in two classes are two keys, and a test that measures
twice must name each measurement (session/session.py, model/case_id.py). Before, both classes' methods were keyed
'<file>::test_train', so one was judged against the other's figures and an 8 MiB -> 64 MiB growth read "improved"."""

import json

CLASSES = '''
import os

class TestLoRA:
    @pytest.mark.gpu_budget(ram="1 GiB")
    def test_train(self, gpu_budget):
        gpu_budget.measure(Scenario(name="lora", run="runners:alloc", params={"mib": 64}))

class TestFull:
    @pytest.mark.gpu_budget(ram="1 GiB")
    def test_train(self, gpu_budget):
        gpu_budget.measure(Scenario(name="full", run="runners:alloc", params={"mib": int(os.environ["FULL_MIB"])}))
'''

TWICE = '''
S = Scenario(name="alloc", run="runners:alloc", params={"mib": 8})

@pytest.mark.gpu_budget(ram="1 GiB")
def test_unlabelled(gpu_budget):
    gpu_budget.measure(S)
    gpu_budget.measure(S)

@pytest.mark.gpu_budget(ram="1 GiB")
def test_labelled(gpu_budget):
    gpu_budget.measure(S, label="a")
    gpu_budget.measure(S, label="a")

@pytest.mark.gpu_budget(ram="1 GiB")
def test_two_labels(gpu_budget):
    gpu_budget.measure(S)
    gpu_budget.measure(S, label="b")
'''


def run(pytester):
    return pytester.runpytest_subprocess("-p", "no:randomly", "--gpu-budget", "--gpu-budget-json=report.json")


def test_methods_of_one_name_in_two_classes_are_two_entries(project, monkeypatch):
    pytester = project(CLASSES)
    monkeypatch.setenv("FULL_MIB", "8")
    run(pytester).assert_outcomes(passed=2)
    (path,) = (pytester.path / "baselines").glob("*/test_mem.json")
    stored = json.loads(path.read_text())["entries"]["tiny"]
    assert set(stored) == {"test_mem.py::TestLoRA.test_train", "test_mem.py::TestFull.test_train"}
    monkeypatch.setenv("FULL_MIB", "64")
    grown = run(pytester)
    grown.assert_outcomes(passed=1, failed=1)
    rows = {r["nodeid"]: r for r in json.loads((pytester.path / "report.json").read_text())["results"]}
    assert rows["test_mem.py::TestFull::test_train"]["verdict"] == "regression"
    assert rows["test_mem.py::TestLoRA::test_train"]["verdict"] == "pass"


def test_a_second_measurement_under_the_same_label_is_an_error_asking_for_one(project):
    pytester = project(TWICE)
    result = run(pytester)
    result.assert_outcomes(passed=1, failed=2)
    unlabelled = "*test_unlabelled: measure() called twice without a label: each measurement of a test is a baseline entry*"
    result.stdout.fnmatch_lines([unlabelled, "*test_labelled: measure() called twice with label='a'*"])


PACKAGE_TEST = '''
import os
import pytest
from gpu_budget import Scenario

@pytest.mark.gpu_budget(ram="1 GiB")
def test_train(gpu_budget):
    gpu_budget.measure(Scenario(name="train", run="runners:alloc", params={{"mib": int(os.environ["{name}_MIB"])}}))
'''


def test_a_monorepos_packages_under_one_ini_keep_one_entry_each(project, pytester, monkeypatch):
    """packages/foo and packages/bar each hold a pyproject.toml and a tests/test_x.py, under one pytest.ini: one
    baselines folder. Keys taken from each package's own root made both 'tests/test_x.py::test_train', one entry:
    foo's first run failed against bar's figure, and bar's 8x growth passed against foo's."""
    project("")  # the ini and the runners
    pytester.path.joinpath("test_mem.py").unlink()
    pytester.makeini("[pytest]\ngpu_budget_preload =\naddopts = --import-mode=importlib\n")
    for name in ("foo", "bar"):
        package = pytester.path / "packages" / name
        (package / "tests").mkdir(parents=True)
        (package / "pyproject.toml").write_text(f'[project]\nname = "{name}"\n')
        (package / "tests" / "test_x.py").write_text(PACKAGE_TEST.format(name=name.upper()))
    inner = ("-p", "no:randomly", "--gpu-budget", "--gpu-budget-json=report.json", "packages")
    monkeypatch.setenv("FOO_MIB", "8")
    monkeypatch.setenv("BAR_MIB", "8")
    pytester.runpytest_subprocess(*inner).assert_outcomes(passed=2)
    (path,) = (pytester.path / "baselines").glob("*/test_x.json")
    assert set(json.loads(path.read_text())["entries"]["tiny"]) == {
        "packages/foo/tests/test_x.py::test_train", "packages/bar/tests/test_x.py::test_train"}
    monkeypatch.setenv("BAR_MIB", "64")
    pytester.runpytest_subprocess(*inner).assert_outcomes(passed=1, failed=1)
    rows = {r["nodeid"]: r["verdict"] for r in json.loads((pytester.path / "report.json").read_text())["results"]}
    assert rows == {"packages/bar/tests/test_x.py::test_train": "regression",
                    "packages/foo/tests/test_x.py::test_train": "pass"}, rows
