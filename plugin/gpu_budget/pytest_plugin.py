"""pytest hooks for pytest-gpu-budget. Thin: each hook delegates to BudgetSession.

Importing this module imports neither torch nor transformers nor hypothesis;
they load in the measured children only.
"""

from __future__ import annotations

import pytest

from gpu_budget.declare.marks import PROBE_HELP, marker_help

_KEY = pytest.StashKey["object"]()


def pytest_addoption(parser: pytest.Parser) -> None:
    from gpu_budget.session.options import register

    register(parser)  # each option's flag and ini value, from the one list of definitions (options.OPTIONS)


@pytest.hookimpl(tryfirst=True)
def pytest_cmdline_main(config: pytest.Config):
    """--gpu-budget-against=REF: this invocation becomes interleaved sessions of REF and the working tree (against/)."""
    from gpu_budget.against import main, wanted

    return main(config) if wanted(config) else None


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", marker_help())
    config.addinivalue_line("markers", PROBE_HELP)
    from gpu_budget.session.session import BudgetSession

    config.stash[_KEY] = BudgetSession(config)
    if config.pluginmanager.hasplugin("xdist"):
        from gpu_budget.session.xdist import XdistBudget

        config.pluginmanager.register(XdistBudget(config.stash[_KEY]), "gpu-budget-xdist")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    config.stash[_KEY].modify_items(items)
    if any("::" in arg for arg in config.args) or config.getoption("keyword") or config.getoption("markexpr"):
        config.stash[_KEY].note_narrowing()


def pytest_collection_finish(session: pytest.Session) -> None:
    session.config.stash[_KEY].note_selected(session.items)


def pytest_deselected(items: list[pytest.Item]) -> None:
    if items:
        items[0].config.stash[_KEY].note_narrowing()


@pytest.fixture
def gpu_budget(request: pytest.FixtureRequest):
    """Measure scenarios of this test: `gpu_budget.measure(scenario, label=None, expect=None)`."""
    from gpu_budget.session.fixture import BudgetRun

    return BudgetRun(request.config.stash[_KEY], request.node)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo):
    test_report = yield
    item.config.stash[_KEY].add_section(item, test_report)
    return test_report


def pytest_sessionfinish(session: pytest.Session) -> None:
    session.config.stash[_KEY].finish(session)


def pytest_terminal_summary(terminalreporter, config: pytest.Config) -> None:
    config.stash[_KEY].terminal_summary(terminalreporter)
