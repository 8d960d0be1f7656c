"""A row carries the knobs its case ran with, a fix's included, in the JSON report and read back: a reader (FINDINGS.md)
tells a fix of a scenario from a variant of it by them."""

import json

from gpu_budget.report.reports import Report

VARIANTS = '''
from gpu_budget import Fix

HALF = Fix("half_mib", "data", "holds half as much", params={"mib": 4})
S = Scenario(name="alloc", run="runners:alloc", params={"mib": 8}, scales={"tiny": {"width": 2}}, supports=(HALF,))


@pytest.mark.gpu_budget(ram="2 GiB")
def test_variants(gpu_budget):
    gpu_budget.measure(S, label="as-reported")
    gpu_budget.measure(S.with_fixes("half_mib"), label="half_mib")
    gpu_budget.measure(S.with_params(mib=2), label="smaller batch")
'''


def test_each_row_holds_the_params_it_ran_with_in_the_report_and_read_back(project):
    pytester = project(VARIANTS)
    result = pytester.runpytest_subprocess("-p", "no:randomly", "--gpu-budget", "--gpu-budget-json=r.json")
    result.assert_outcomes(passed=1)
    data = json.loads((pytester.path / "r.json").read_text())
    assert {row["label"]: row["params"] for row in data["results"]} == {
        "as-reported": {"mib": 8, "width": 2}, "half_mib": {"mib": 4, "width": 2}, "smaller batch": {"mib": 2, "width": 2}}
    read = {row.label: row.params for row in Report.from_json(data).results}
    assert read["half_mib"] == {"mib": 4, "width": 2}
