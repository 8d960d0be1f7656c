"""A test that caught measure()'s failure and passed, or skipped, errors at its teardown, naming the case.

pytest.fail() raises an exception outside Exception's tree, but a bare
`except:` or `except BaseException:` (a retry loop, a cleanup) still catches
it: the table then said "over-budget FAIL" while pytest counted the test
passed and the session exited 0, a red case in a green gate. One that skips
in its `except` (`pytest.skip("the runner is too small")`) hid it the same
way: the step summary said "1 failed", pytest "1 skipped", the exit 0.
"""

from __future__ import annotations

from collections.abc import Generator

import pytest

from gpu_budget.session import held, own_rows


def problem(item: pytest.Item) -> str | None:
    """Why the item's test fails though its call passed or skipped: a case it measured failed the gate; else None."""
    rows = own_rows.measured(item)
    if held.call_passed(item):
        how = "passed"
    elif any(row.test_outcome == "skipped" for row in rows):  # the call's outcome, given to the rows it measured
        how = "skipped"
    else:
        return None
    failed = [f"{row.nodeid} ({row.verdict})" for row in rows if not row.passed]
    if not failed:
        return None
    return (f"{item.nodeid}: {how} though the gate failed its case {', '.join(failed)}: the test caught measure()'s "
            "failure (a bare except: or except BaseException:); let it propagate, or declare the failure expected "
            "(expect='over-budget')")


class CaughtCheck:
    """The plugin that errors such a test once its teardown is done (a fixture may measure in its teardown)."""

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_teardown(self, item: pytest.Item) -> Generator[None, None, None]:
        yield
        why = problem(item)
        if why:
            pytest.fail(why, pytrace=False)
