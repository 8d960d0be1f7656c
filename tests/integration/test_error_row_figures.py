"""An error row's figures (a child that crashed, died of out-of-memory or timed out) are what it held when it stopped,
and every report says so: the terminal's table and case lines, the legend, FINDINGS.md."""

import json

from gpu_budget.report.findings import main

CRASHES = '''
S = Scenario(name="alloc", run="runners:alloc", params={"mib": 8})


@pytest.mark.gpu_budget(ram="2 GiB")
def test_fix(gpu_budget):
    gpu_budget.measure(S, label="as-reported")
    gpu_budget.measure(Scenario(name="alloc", run="runners:boom", params={"mib": 8}), label="crashes")
'''


def test_an_error_rows_figures_say_they_are_what_the_child_held_when_it_failed(project, tmp_path):
    """Before, the crashed case's row read as measured: "test_mem.py::test_fix::crashes  tiny  19.64 MiB  19.64 MiB  -
    ... error FAIL", and FINDINGS.md's "| crashes | - | tiny | ram_tree | - | 19.64 MiB | - | error: ... |
    35.61 MiB, 19.64 MiB |"."""
    pytester = project(CRASHES)
    result = pytester.runpytest_subprocess("-p", "no:randomly", "--gpu-budget", "--gpu-budget-json=r.json", "-rA")
    result.assert_outcomes(failed=1)
    for said in (r"test_mem.py::test_fix::crashes +tiny +\S+ MiB so far +\S+ MiB so far +- +RAM 2.00 GiB",
                 r"crashes \(tiny\): error FAIL; peaks so far RAM tree \S+ MiB, RAM main \S+ MiB; .*",
                 r"peaks so far: RAM tree \S+ MiB, RAM main \S+ MiB", r"  so far: a figure of a case whose measured child failed .*"):
        result.stdout.re_match_lines([said])
    result.stdout.re_match_lines([r"test_mem.py::test_fix::as-reported +tiny +\S+ MiB +\S+ MiB +- "])  # measured: plain
    out = tmp_path / "F.md"
    assert main([str(pytester.path / "r.json"), "-o", str(out)]) == 0
    (line,) = [line for line in out.read_text().splitlines() if line.startswith("| crashes |")]
    cells = [c.strip() for c in line.strip("|").split("|")]
    assert cells[5].endswith(" MiB when it failed") and cells[8].endswith(" MiB when it failed"), line
    row = json.loads((pytester.path / "r.json").read_text())["results"][1]
    assert row["error"]["kind"] == "exception" and row["peaks"]["ram"]  # the report keeps what it held, with why
