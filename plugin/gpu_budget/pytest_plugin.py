"""pytest hooks for pytest-gpu-budget. Thin: each hook delegates to BudgetSession.

Importing this module imports neither torch nor transformers nor hypothesis;
they load in the measured children only.
"""

from __future__ import annotations

import pytest

from gpu_budget.marks import marker_help

_KEY = pytest.StashKey["object"]()


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("gpu-budget", "memory-budget tests of real fine-tune steps")
    group.addoption("--gpu-budget", action="store_true", dest="gpu_budget",
                    help="run the memory-budget tests (skipped otherwise).")
    group.addoption("--gpu-budget-update", action="store_true", dest="gpu_budget_update",
                    help="write new and changed baseline entries; prune unused ones when the whole suite ran.")
    group.addoption("--gpu-budget-baselines", dest="gpu_budget_baselines", metavar="DIR", default=None,
                    help="baselines folder (default: ini gpu_budget_baselines, else 'baselines').")
    group.addoption("--gpu-budget-scale", dest="gpu_budget_scale", choices=("tiny", "real"), default="tiny",
                    help="model scale to run: tiny (seconds on a CPU) or real (the architecture's dimensions).")
    group.addoption("--gpu-budget-json", dest="gpu_budget_json", metavar="PATH", default=None,
                    help="write the JSON report here.")
    group.addoption("--gpu-budget-timeout", dest="gpu_budget_timeout", type=float, default=900.0, metavar="SECONDS",
                    help="kill a measured child after this many seconds (a reported failure). Default 900.")
    group.addoption("--gpu-budget-threads", dest="gpu_budget_threads", type=int, default=0, metavar="N",
                    help="torch threads in each measured child (default 1, on any host: a peak must not depend "
                         "on the runner's cores; recorded in the fingerprint).")
    group.addoption("--gpu-budget-plots", dest="gpu_budget_plots", metavar="DIR", default=None,
                    help="write one PNG per measured case here: host RAM and GPU memory per phase and step, "
                         "with the budget and the baseline (needs the plots extra: matplotlib).")
    group.addoption("--gpu-budget-require-gpu", action="store_true", dest="gpu_budget_require_gpu",
                    help="the GPU gate: fail when no CUDA GPU is visible (a test skipped for lack of one fails), "
                         "and fail the session when nothing was measured.")
    group.addoption("--gpu-budget-malloc", dest="gpu_budget_malloc", choices=("steady", "system"), default="steady",
                    help="host allocator of the measured children: steady (glibc's mmap threshold fixed, so peaks "
                         "repeat to 0.1 MiB; default) or system (glibc's defaults, as a plain process runs).")
    group.addoption("--gpu-budget-cpu-dispatch", dest="gpu_budget_cpu_dispatch", choices=("avx2", "native"), default=None,
                    help="CPU kernels of the measured children: avx2 (default on x86-64: ATen, oneDNN and MKL capped at "
                         "AVX2, so any x86-64 host runs the same kernels and peaks) or native (the libraries pick by CPU).")
    group.addoption("--gpu-budget-snapshot", dest="gpu_budget_snapshot", choices=("rerun", "never"), default="rerun",
                    help="memory snapshots of failing CUDA cases: rerun (default) runs a failing case once more with "
                         "the allocation recorder on and keeps its snapshot (the judged run never records), or never.")
    group.addoption("--gpu-budget-remediate", action="store_true", dest="gpu_budget_remediate",
                    help="when a case breaks its budget, search its fixes cheapest first, each in a measured child, "
                         "and report the cheapest passing set (a case expected over budget keeps its verdict).")
    group.addoption("--gpu-budget-remediate-max-runs", dest="gpu_budget_remediate_max_runs", default="8", metavar="N",
                    help="at most N real runs per remediation search (default 8).")
    group.addoption("--gpu-budget-explore", action="store_true", dest="gpu_budget_explore",
                    help="run the Hypothesis explorations (opt-in: estimator-screened, confirmed by real runs).")
    group.addoption("--gpu-budget-explore-examples", dest="gpu_budget_explore_examples", type=int, default=0,
                    metavar="N", help="Hypothesis max_examples per exploration (default 20).")
    parser.addini("gpu_budget_baselines", "baselines folder, relative to the rootdir", default="baselines")
    parser.addini("gpu_budget_preload", "modules the forkserver imports once for all children",
                  type="args", default=["torch", "transformers"])
    parser.addini("gpu_budget_cpu_dispatch", "CPU kernels of the measured children: avx2 or native", default="avx2")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", marker_help())
    from gpu_budget.session import BudgetSession

    config.stash[_KEY] = BudgetSession(config)
    if config.pluginmanager.hasplugin("xdist"):
        from gpu_budget.xdist import XdistBudget

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
    from gpu_budget.fixture import BudgetRun

    return BudgetRun(request.config.stash[_KEY], request.node)


def pytest_sessionfinish(session: pytest.Session) -> None:
    session.config.stash[_KEY].finish(session)


def pytest_terminal_summary(terminalreporter, config: pytest.Config) -> None:
    config.stash[_KEY].terminal_summary(terminalreporter)
