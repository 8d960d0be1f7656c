"""A test repeated by pytest-repeat (--count N, @pytest.mark.repeat(N)): every repetition is the same case, judged
against the test's one baseline entry, never an entry of its own per repetition ("test_p[4-1-2]")."""

import json

import pytest
from inner_session import rows

pytest.importorskip("pytest_repeat", reason="pytest-repeat is not installed (not in the dev extra)")

CASES = '''
@pytest.mark.gpu_budget(ram="2 GiB")
@pytest.mark.parametrize("mib", [4])
def test_p(gpu_budget, mib):
    gpu_budget.measure(Scenario(name="alloc", run="runners:alloc", params={"mib": mib}))
'''


def stored(pytester) -> list[str]:
    found = json.loads(next((pytester.path / "baselines").glob("*/test_mem.json")).read_text())
    return list(found["entries"]["tiny"])


def test_each_repetition_is_judged_against_the_tests_one_entry(project):
    pytester = project(CASES)
    first = pytester.runpytest_subprocess("-p", "no:randomly", "-p", "no:xdist", "--gpu-budget")
    first.assert_outcomes(passed=1)
    assert stored(pytester) == ["test_mem.py::test_p[4]"]
    again = pytester.runpytest_subprocess("-p", "no:randomly", "-p", "no:xdist", "--gpu-budget", "--count", "2",
                                          "--gpu-budget-json=r.json")
    again.assert_outcomes(passed=2)
    found = {name: row["verdict"] for name, row in rows(pytester).items()}
    assert found == {"test_p[4-1-2]": "pass", "test_p[4-2-2]": "pass"}
    assert stored(pytester) == ["test_mem.py::test_p[4]"]
