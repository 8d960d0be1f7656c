"""pytest hooks for pytest-gpu-budget: the options, --gpu-budget-against, and the session registered as the plugin.

The session object (session/session.py BudgetSession) is registered at
configure time and implements the rest of the hooks as its methods, as
pytest-memray's manager does; pytest-xdist's side is a second object
(session/xdist.py). Importing this module imports neither torch nor
transformers nor hypothesis; they load in the measured children only.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from gpu_budget.declare.marks import PROBE_HELP, marker_help

if TYPE_CHECKING:
    from gpu_budget.session.fixture import BudgetRun

SESSION = pytest.StashKey["BudgetSession"]()
PLUGIN_NAME = "gpu-budget-session"


def pytest_addoption(parser: pytest.Parser) -> None:
    from gpu_budget.session.options import register

    register(parser)  # each option's flag and ini value, from the one list of definitions (options.OPTIONS)


@pytest.hookimpl(tryfirst=True)
def pytest_cmdline_main(config: pytest.Config) -> int | None:
    """--gpu-budget-against=REF: this invocation becomes interleaved sessions of REF and the working tree (against/)."""
    from gpu_budget.against import main, wanted

    return main(config) if wanted(config) else None


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", marker_help())
    config.addinivalue_line("markers", PROBE_HELP)
    from gpu_budget.session.session import BudgetSession

    session = config.stash[SESSION] = BudgetSession(config)
    config.pluginmanager.register(session, PLUGIN_NAME)
    if not session.is_worker:  # a misspelt gate key in the ini file is a usage error, not pytest's warning alone
        from gpu_budget.session.misspelt import MisspeltKeys

        config.pluginmanager.register(MisspeltKeys(config), "gpu-budget-misspelt")
    if session.options.enabled:
        from gpu_budget.session.attempts import Attempts
        from gpu_budget.session.caught import CaughtCheck
        from gpu_budget.session.stopped import StopCause
        from gpu_budget.session.unmeasured import UnmeasuredCheck

        config.pluginmanager.register(Attempts(session.data), "gpu-budget-attempts")
        config.pluginmanager.register(CaughtCheck(), "gpu-budget-caught")
        config.pluginmanager.register(StopCause(config), "gpu-budget-stop-cause")

        config.pluginmanager.register(UnmeasuredCheck(session.data, session.problems, session.is_worker),
                                      "gpu-budget-unmeasured")
    if config.pluginmanager.hasplugin("xdist"):
        from gpu_budget.session.xdist import XdistBudget

        config.pluginmanager.register(XdistBudget(session), "gpu-budget-xdist")


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """After every other hook: a test one of them marked gpu_budget is a budget test too (the session noted the others
    first, tryfirst, before any reordering)."""
    from gpu_budget.session.collection import note_marked_late

    session = config.stash[SESSION]
    note_marked_late(items, session.data, session.options)


@pytest.hookimpl(tryfirst=True)
def pytest_keyboard_interrupt() -> None:
    """A SIGTERM after a Ctrl-C (a CI job's cancel) lets the session's end run to its end (isolate/lifecycle.py)."""
    from gpu_budget.isolate import lifecycle

    lifecycle.ending()


def pytest_make_parametrize_id(config: pytest.Config, val: object, argname: str) -> str | None:
    """A Scenario parameter's id is its name and fixes ("big+lora"), not its place in the list ("scenario1"): the id
    is part of the case's baseline key, so a reordered list keeps each scenario's own baseline."""
    from gpu_budget.declare.scenario import Scenario
    from gpu_budget.session.param_ids import scenario_id

    return scenario_id(val) if isinstance(val, Scenario) else None


@pytest.fixture
def gpu_budget(request: pytest.FixtureRequest) -> BudgetRun:
    """Measure scenarios of this test: `gpu_budget.measure(scenario, label=None, expect=None)`."""
    from gpu_budget.session.fixture import BudgetRun

    return BudgetRun(request.config.stash[SESSION], request.node)
