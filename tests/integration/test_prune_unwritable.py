"""An --gpu-budget-update run whose prune cannot write the baseline file (a read-only checkout, a full disk, a folder
where its lock should be) fails the gate naming the file, and still prints the verdicts and writes the report
(judge/store.py prune). Before, the prune's OSError left pytest_sessionfinish: a traceback of pytest's internals, no
gpu-budget section, no JSON report."""

import json

import pytest

CASES = '''
S = Scenario(name="alloc", run="runners:alloc", params={"mib": 8})

@pytest.mark.gpu_budget(ram="2 GiB")
def test_kept(gpu_budget):
    gpu_budget.measure(S)
'''

GONE = '''
@pytest.mark.gpu_budget(ram="2 GiB")
def test_gone(gpu_budget):
    gpu_budget.measure(S)
'''


def run(pytester, *args):
    return pytester.runpytest_subprocess("-p", "no:randomly", "-p", "no:xdist", "--gpu-budget", "--gpu-budget-json=r.json",
                                         *args)


def test_a_prune_that_cannot_write_fails_the_gate_naming_the_file(project):
    pytester = project(CASES + GONE)
    run(pytester).assert_outcomes(passed=2)
    (path,) = (pytester.path / "baselines").glob("*/test_mem.json")
    project(CASES)  # test_gone deleted: the update prunes its entry
    (path.parent / f".{path.name}.lock").mkdir()
    result = run(pytester, "--gpu-budget-update")
    result.assert_outcomes(passed=1)
    assert result.ret == pytest.ExitCode.TESTS_FAILED and "Traceback" not in result.stdout.str() + result.stderr.str()
    result.stdout.fnmatch_lines([f"gpu-budget gate FAILED: could not drop 1 entry from {path}: *Is a directory*"])
    assert [r["verdict"] for r in json.loads((pytester.path / "r.json").read_text())["results"]] == ["pass"]
    assert set(json.loads(path.read_text())["entries"]["tiny"]) == {"test_mem.py::test_kept", "test_mem.py::test_gone"}


def test_a_broken_file_of_a_deleted_test_module_is_named_not_kept_in_silence(project):
    """A baseline file whose test module is gone is pruned by the update; where it is broken (a half-resolved merge)
    no test of it runs to report it, so the update named nothing and left it. It fails the gate named, left as is."""
    pytester = project(CASES)
    run(pytester).assert_outcomes(passed=1)
    (kept,) = (pytester.path / "baselines").glob("*/test_mem.json")
    gone = kept.with_name("test_old.json")
    gone.write_text('{"entries": <<<<<<< HEAD\n')
    result = run(pytester, "--gpu-budget-update")
    result.assert_outcomes(passed=1)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    said = f"gpu-budget gate FAILED: left as it is, a baseline file no test collected uses (its test file is gone): " \
           f"baseline file {gone} is not valid JSON*"
    result.stdout.fnmatch_lines([said])
    assert gone.read_text() == '{"entries": <<<<<<< HEAD\n'
