"""The gate's summary says what a first run wrote where, and what its skips are, without -rs (throwaway projects)."""

import pytest

TWO_CASES = '''
S = Scenario(name="alloc", run="runners:alloc", params={"mib": 8})

@pytest.mark.gpu_budget(ram="2 GiB")
def test_fits(gpu_budget):
    gpu_budget.measure(S, label="a")
    gpu_budget.measure(S, label="b")
'''

SKIPS = '''
S = Scenario(name="alloc", run="runners:alloc", params={"mib": 8})

@pytest.mark.gpu_budget(ram="2 GiB")
def test_fits(gpu_budget):
    gpu_budget.measure(S)

@pytest.mark.gpu_budget_probe
def test_probe(gpu_budget):
    gpu_budget.peak(S)

def test_exploration(gpu_budget):
    gpu_budget.explore(S, {"mib": [1, 2]})

@pytest.mark.gpu_budget(vram="1 GiB", device="cuda")
def test_vram(gpu_budget):
    gpu_budget.measure(S)

@pytest.mark.skip(reason="not a budget test")
def test_plain():
    pass
'''


def baselines_lines(result) -> list[str]:
    return [line for line in result.stdout.lines if line.startswith("baselines:")]


@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["serial", "xdist"])
def test_a_first_run_names_the_file_it_recorded_and_a_second_run_says_nothing(project, workers):
    """Serial, the session writes each entry; under xdist the controller writes its workers': the line is the same."""
    pytester = project(TWO_CASES)
    first = pytester.runpytest_subprocess("-p", "no:randomly", "--gpu-budget", *workers)
    first.assert_outcomes(passed=1)
    (path,) = (pytester.path / "baselines").glob("*/test_mem.json")
    assert baselines_lines(first) == [(f"baselines: recorded 2 new entries in {path.relative_to(pytester.path)}; "
                                       "commit it: under CI a case without a baseline fails")]
    again = pytester.runpytest_subprocess("-p", "no:randomly", "--gpu-budget", *workers)
    again.assert_outcomes(passed=1)
    assert baselines_lines(again) == []  # nothing new: nothing written, no line


@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["serial", "xdist"])
def test_the_skips_of_the_gate_are_grouped_by_why_without_rs(project, workers):
    """A probe, an exploration and a case pinned to CUDA on this CPU host skip; a plain skipped test is not the gate's.
    Under xdist the controller groups the skip reports its workers sent."""
    pytester = project(SKIPS)
    result = pytester.runpytest_subprocess("-p", "no:randomly", "--gpu-budget", "-p", "no:cacheprovider", *workers)
    result.assert_outcomes(passed=1, skipped=4)
    assert "SKIPPED" not in result.stdout.str()  # pytest itself lists no reason without -rs
    result.stdout.fnmatch_lines([("skipped 3: 1 probe (opt-in: --gpu-budget-probes), 1 exploration (opt-in: "
                                  "--gpu-budget-explore), 1 CUDA-only (no CUDA GPU here)")])


def test_a_passing_case_with_a_note_says_it_in_the_summary(project):
    """A note on a passing row (its params differ from its baseline's) is printed, not left to the JSON; a row with
    nothing to say prints nothing."""
    pytester = project(TWO_CASES.replace('{"mib": 8}', '{"mib": 8, "tag": 1}'))
    pytester.runpytest_subprocess("-p", "no:randomly", "--gpu-budget").assert_outcomes(passed=1)
    same = pytester.runpytest_subprocess("-p", "no:randomly", "--gpu-budget")
    same.assert_outcomes(passed=1)
    assert not [line for line in same.stdout.lines if "test_mem.py::test_fits" in line and ": " in line]
    project(TWO_CASES.replace('{"mib": 8}', '{"mib": 8, "tag": 2}'))
    changed = pytester.runpytest_subprocess("-p", "no:randomly", "--gpu-budget")
    changed.assert_outcomes(passed=1)
    changed.stdout.fnmatch_lines(["test_mem.py::test_fits::a: params differ from the baseline's: tag 1 -> 2*",
                                  "test_mem.py::test_fits::b: params differ from the baseline's: tag 1 -> 2*"])
