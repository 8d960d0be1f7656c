"""A test that caught measure()'s failure and passed errors at its teardown, naming the case.

pytest.fail() raises an exception outside Exception's tree, but a bare
`except:` or `except BaseException:` (a retry loop, a cleanup) still catches
it: the table then said "over-budget FAIL" while pytest counted the test
passed and the session exited 0, a red case in a green gate.
"""

from __future__ import annotations

from collections.abc import Generator

import pytest

from gpu_budget.session import held, own_rows


def problem(item: pytest.Item) -> str | None:
    """Why the item's test fails though its call passed: a case it measured failed the gate; else None."""
    if not held.call_passed(item):
        return None
    failed = [f"{row.nodeid} ({row.verdict})" for row in own_rows.measured(item) if not row.passed]
    if not failed:
        return None
    return (f"{item.nodeid}: passed though the gate failed its case {', '.join(failed)}: the test caught measure()'s "
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
