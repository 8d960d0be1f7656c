"""card= on a host without CUDA: a case that cannot run here is skipped, and nothing says it ran as on its card."""

import json

CASES = '''
@pytest.mark.gpu_budget(card="T4", device="cuda")
def test_pinned_to_cuda(gpu_budget):
    gpu_budget.measure(Scenario(name="a", run="runners:alloc", params={"mib": 8}))
'''


def test_a_card_case_skipped_here_does_not_say_it_ran_as_on_its_card(project, monkeypatch):
    pytester = project(CASES)
    summary = pytester.path / "summary.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    result = pytester.runpytest_subprocess("-p", "no:randomly", "-p", "no:cacheprovider", "-p", "no:xdist",
                                           "--gpu-budget", "--gpu-budget-json=r.json", "-rs")
    result.assert_outcomes(skipped=1)
    result.stdout.fnmatch_lines(["*the test pins device='cuda'; this host has no CUDA GPU*"])
    (row,) = json.loads((pytester.path / "r.json").read_text())["results"]
    assert row["verdict"] == "skipped" and row["budget_origin"] == "card" and "card" not in row, row
    assert "as on" not in result.stdout.str() and "as on" not in summary.read_text()


ALONE = '''
@pytest.mark.gpu_budget(card="T4")
def test_card_alone(gpu_budget):
    gpu_budget.measure(Scenario(name="a", run="runners:alloc", params={"mib": 8}))
'''


def test_a_case_with_a_card_alone_says_its_card_went_unchecked(project):
    """It passed with budget "-" and not a word of its card; under --gpu-budget-require-gpu it passed too, the gate
    counting "0 test(s) needed one"."""
    pytester = project(ALONE)
    args = ("-p", "no:randomly", "-p", "no:cacheprovider", "-p", "no:xdist", "--gpu-budget")
    result = pytester.runpytest_subprocess(*args, "--gpu-budget-json=r.json")
    result.assert_outcomes(passed=1)
    said = "*test_card_alone: card='T4' (on CUDA, its cap and the VRAM budget *) not checked: this host has no CUDA GPU*"
    result.stdout.fnmatch_lines([said])
    (row,) = json.loads((pytester.path / "r.json").read_text())["results"]
    assert row["unchecked"] and row["unchecked"][0].startswith("card='T4'"), row
    required = pytester.runpytest_subprocess(*args, "--gpu-budget-require-gpu")
    required.assert_outcomes(failed=1)
    required.stdout.fnmatch_lines(["*card='T4' (on CUDA, *) needs a CUDA GPU to check*"])
