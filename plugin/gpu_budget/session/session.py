"""One object owns the gate's session: its options, its data, and the pytest side of every call.

The pytest hooks (pytest_plugin.py) only delegate here. The session reads the
mark and the device, hands them with its options and a child runner down to
case.py (one case) or explore.py (one exploration), keeps what comes back in
its SessionData (session_data.py, also the xdist payload) and tells pytest
(skip, fail). At the end it writes baselines, applies the fail-safe and hands
the data to outputs.py.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pytest

from gpu_budget.declare.marks import PROBE, BudgetMark
from gpu_budget.declare.marks import gpu_budget as read_mark
from gpu_budget.declare.marks import merge as merge_marks
from gpu_budget.declare.scenario import Scenario
from gpu_budget.isolate import forkserver, placement
from gpu_budget.judge import failsafe, files
from gpu_budget.judge.store import BaselineStore, PendingWrite, Staging
from gpu_budget.measure import host
from gpu_budget.model.json_value import JsonMapping
from gpu_budget.model.result import Measurement, Note, Result, Verdict
from gpu_budget.report import revision, terminal
from gpu_budget.requires import MissingDependency
from gpu_budget.search.explore import DATABASE_DIR, DEFAULT_REAL_RUNS, Envelope, Exploration, budget_to_explore, explore_scenario
from gpu_budget.session import case, outputs
from gpu_budget.session.children import ChildRunner
from gpu_budget.session.data import Explored, SessionData
from gpu_budget.session.environments import Environments
from gpu_budget.session.options import Options, is_ci
from gpu_budget.session.sweep import sweep_case

MARKER = "gpu_budget"
NOT_ENABLED = "memory-budget test: run with --gpu-budget"
NOT_PROBING = "an unjudged probe (no verdict): run with --gpu-budget-probes"
SECTION = "gpu-budget"  # the title of the section a test's report gets, one line per measured case
MEASURED = pytest.StashKey["list[Result]"]()  # an item's judged cases, for its report


class BudgetSession:
    """Measures each declared case through case.py, keeps the results in its SessionData, writes the outputs."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.options = Options.from_config(config)
        self.ci = is_ci()
        self.data = SessionData()
        self.placement: dict[str, Any] | None = None  # an xdist worker's GPU and cores (xdist.py)
        self.problems: list[str] = []  # session-level failures: the fail-safe, baseline writes
        self.warnings: list[str] = []  # the fail-safe's findings where it does not fail (no CI)
        self.pinned_gpu: str | None = None  # a serial run on a multi-GPU host measures on this one (placement.py)
        self.environments = Environments(lambda: environments_folder(config, self.options.envs),
                                         self.data.environments.append)
        self.run_child = ChildRunner(self.options, assets_folder(config), self.environments)
        self.written: Counter[str] = Counter()  # baseline entries written per file: the summary says where
        # the commit measured, read before the session writes anything (its baselines would make the tree dirty)
        self.revision = (revision.state(config.rootpath) if self.options.enabled and self.options.json
                         and not self.is_worker else None)

    @property
    def is_worker(self) -> bool:
        return hasattr(self.config, "workerinput")

    # -- collection ---------------------------------------------------------
    def modify_items(self, items: list[pytest.Item]) -> None:
        skip, probing = pytest.mark.skip(reason=NOT_ENABLED), pytest.mark.skip(reason=NOT_PROBING)
        for item in items:
            if not _is_budget_test(item):
                continue
            name = item.originalname if hasattr(item, "originalname") else item.name
            self.data.collected[str(Path(str(item.path)))].add(name)
            self.data.order.append(item.nodeid)
            if not self.options.enabled:
                item.add_marker(skip)
            elif item.get_closest_marker(PROBE) is not None and not self.options.probes:
                item.add_marker(probing)

    def note_narrowing(self) -> None:
        self.data.narrowed = True

    def note_selected(self, items: list[pytest.Item]) -> None:
        """How many budget tests are left to run once deselection is done (the fail-safe's count)."""
        self.data.selected = sum(1 for item in items if _is_budget_test(item))

    def place(self, placement: dict[str, Any]) -> None:
        """An xdist worker's GPU and cores (xdist.py): its children measure there, with the session's threads."""
        self.placement = placement

    # -- one test's calls (the gpu_budget fixture) ----------------------------
    def mark_for(self, item: pytest.Item) -> BudgetMark:
        """The test's budget, expectation and device, for this session's scale and the device its child runs on."""
        arguments = merge_marks(_markers_outermost_first(item), where=item.nodeid)
        host = "cuda" if self._probe()["cuda"] else "cpu"
        return read_mark(**arguments, scale=self.options.scale, host=host, where=item.nodeid)

    def _probe(self) -> dict[str, Any]:
        """Start the forkserver (with the kernel-dispatch pin), and read the device and the setup once."""
        if self.data.device is None:
            opts = self.options
            if not self.is_worker and self.placement is None:  # before the forkserver starts: it inherits the pin
                self.pinned_gpu = placement.pin_gpus(os.environ, opts.gpus_per_worker)
            device = forkserver.probe(preload=opts.preload, dispatch_mode=opts.dispatch)
            self.data.hardware = host.collect(device, host.hardware_key(device),
                                              forkserver.forkserver_environ(opts.dispatch), opts.threads,
                                              opts.malloc, opts.dispatch, opts.preload)
            self.data.device = {k: v for k, v in device.items() if k != "setup"}
        return self.data.device

    def _child_for(self, mark: BudgetMark) -> Callable[[Scenario, dict | None], Measurement]:
        cpu_only = mark.pinned and mark.device == "cpu"

        def run(scenario: Scenario, snapshot: dict[str, Any] | None = None) -> Measurement:
            self.data.ran_functions |= scenario.command is None  # forked from the forkserver: its preload counts
            return self.run_child(scenario, cpu_only=cpu_only, snapshot=snapshot)

        return run

    def measure(self, item: pytest.Item, scenario: Scenario, label: str | None = None,
                expect: str | None = None) -> Result:
        if not self.options.enabled:
            pytest.skip(NOT_ENABLED)
        if not isinstance(scenario, Scenario):
            raise TypeError(f"{item.nodeid}: measure() takes a gpu_budget.Scenario, got {scenario!r}")
        if item.get_closest_marker(PROBE) is not None:  # else --gpu-budget-probes would hide a verdict from the gate
            pytest.fail(f"{item.nodeid}: marked {PROBE}, an unjudged probe, but measure() judges: measure with "
                        f"peak(), or drop the marker", pytrace=False)
        mark = self.mark_for(item)
        one = case.Case(item.nodeid, str(item.path), item.name, scenario, label, expect, self._namesakes(str(item.path)))
        outcome = case.run(one, mark, self.options, self._probe(), self.data.hardware, self._child_for(mark),
                           ci=self.ci, worker=self.placement)
        if outcome.baseline_write:
            self._record(outcome.baseline_write)
        store = files.path_for(self.options.baselines, self.data.hardware["key"], one.module)
        result = with_store(outcome.result, store, recorded=outcome.baseline_write is not None)
        if self.options.sweep and result.measurement is not None:  # reported beside the verdict, never judged
            result = result.but(sweep=sweep_case(scenario, self.options.sweep, result.measurement, self._child_for(mark),
                                                 cuda=bool(self._probe()["cuda"])))
        self.data.rows.append(result)
        if outcome.skipped:
            pytest.skip(result.message)
        item.stash.setdefault(MEASURED, []).append(result)
        item.user_properties.extend(user_properties(result))
        if not result.passed:
            pytest.fail(terminal.failure_text(result), pytrace=False)  # the detail in the longrepr: junitxml, IDEs
        return result

    def _namesakes(self, module: str) -> tuple[str, ...]:
        """The other collected test files whose baselines share this module's file (one stem, one store)."""
        return BaselineStore.of(self.options.baselines, self.data.hardware).namesakes(module, self.data.collected)

    def add_section(self, item: pytest.Item, test_report: pytest.TestReport) -> None:
        """The call's report gets a "gpu-budget" section: one line per case measured (pytest -rA shows it)."""
        rows = item.stash.get(MEASURED, [])
        if test_report.when == "call" and rows:
            test_report.sections.append((SECTION, "\n".join(terminal.case_line(row) for row in rows)))

    def peak(self, item: pytest.Item, scenario: Scenario) -> Measurement:
        """A measurement neither judged nor recorded: one probe of a search (bisection, exploration)."""
        if not self.options.enabled:
            pytest.skip(NOT_ENABLED)
        mark = self.mark_for(item)
        skip_or_fail(*case.probe_unmeasurable(scenario, mark, self.options.scale, self._probe()),
                     self.options.require_gpu)
        try:
            measurement = self._child_for(mark)(scenario, None)
        except MissingDependency as exc:
            pytest.skip(str(exc))
        if measurement.error_kind == "missing-dependency":
            pytest.skip(measurement.error.message)
        self.data.probes += 1  # a child ran, even if it crashed
        return measurement

    def explore(self, item: pytest.Item, scenario: Scenario, envelope: Envelope,
                budget: str | int | Mapping[str, str | int] | None = None, boundary: str | None = None,
                max_real_runs: int = DEFAULT_REAL_RUNS, seed: int | None = 0,
                estimate: Callable[[dict], int] | None = None) -> Exploration:
        """Explore `scenario` over `envelope` (explore.py), its real runs through peak(); kept in the session's data."""
        if not self.options.explore:
            pytest.skip("exploration is opt-in: run with --gpu-budget --gpu-budget-explore")
        mark = self.mark_for(item)
        cuda = mark.device == "cuda"
        declared = mark.budget.vram if cuda else mark.budget.ram
        against, why_not = budget_to_explore(budget, declared, self.options.scale, mark.device)
        if why_not:
            pytest.skip(why_not)
        found = explore_scenario(scenario, envelope, against, lambda s: self.peak(item, s), scale=self.options.scale,
                                 cuda=cuda, boundary=boundary, max_examples=self.options.explore_examples,
                                 max_real_runs=max_real_runs, seed=seed, estimate=estimate,
                                 database=Path(str(self.config.rootpath)) / DATABASE_DIR)
        self.data.explorations.append(Explored(item.nodeid, found))
        item.user_properties.append(("gpu_budget_exploration", found.to_json()))
        return found

    def note(self, item: pytest.Item, scenario: Scenario, text: str, data: JsonMapping) -> None:
        self.data.notes.append(note_row(item.nodeid, scenario.name, self.options.scale, text, data))

    def _record(self, write: PendingWrite) -> None:
        """Write a baseline entry now; an xdist worker ships it to the controller, which alone writes (as JSON)."""
        store = BaselineStore.of(self.options.baselines, self.data.hardware)
        write = store.with_packages(write)
        if self.is_worker:
            self.data.pending.append(write.to_json())
        else:
            store.stage(write)
            self.written.update(store.flush())

    # -- end of session -----------------------------------------------------
    def finish(self, session: pytest.Session) -> None:
        """Serial run or xdist controller: write baselines and the outputs; apply the fail-safe.

        An xdist worker stops here: xdist.py ships its data to the controller.
        """
        self.environments.close()
        if self.is_worker:
            return
        self.problems.extend(write_pending(self.data, self.written))
        if self.options.update and not self.data.narrowed and self.data.hardware:
            prune(self.data, self.options)
        if self.options.enabled and not self.config.option.collectonly:  # collecting measures nothing, by design
            found = self._nothing_measured()
            (self.problems if self.ci or self.options.require_gpu else self.warnings).extend(found)
        outputs.write_files(self.data, self.options, self.problems, self.revision)
        if self.problems:
            session.shouldfail = session.shouldfail or "gpu-budget gate failed: " + "; ".join(self.problems)
            if session.exitstatus == pytest.ExitCode.OK:
                session.exitstatus = pytest.ExitCode.TESTS_FAILED

    def _nothing_measured(self) -> list[str]:
        opts, hardware = self.options, self.data.hardware
        store = BaselineStore.of(opts.baselines, hardware) if hardware else None
        folder = store.folder(next(iter(self.data.collected), None)) if store else None  # the tests' project's
        return failsafe.nothing_measured(
            selected=self.data.selected, rows=self.data.rows, probes=self.data.probes, require_gpu=opts.require_gpu,
            ci=self.ci, update=opts.update, folder=folder, hardware_key=store.hardware_key if store else None,
            cuda=lambda: host.Probed.from_json(self.data.device or self._probe_quietly() or {}).device.cuda)

    def _probe_quietly(self) -> dict[str, Any] | None:
        try:
            return self._probe()
        except Exception as exc:  # noqa: BLE001  the fail-safe reports it; the session is ending anyway
            self.problems.append(f"probing the device failed: {exc}")
            return None

    def terminal_summary(self, terminalreporter: Any) -> None:
        outputs.terminal_summary(terminalreporter, self.data, self.options, self.problems, self.warnings,
                                 self.pinned_gpu, self.written)



def skip_or_fail(reason: str | None, needs_gpu: bool, require_gpu: bool) -> None:
    """Skip a probe that cannot run here, with the reason; fail it where the runner must have the GPU it lacks."""
    if reason and needs_gpu and require_gpu:
        pytest.fail(f"{reason}, and --gpu-budget-require-gpu says this runner must have one", pytrace=False)
    if reason:
        pytest.skip(reason)


def user_properties(result: Result) -> list[tuple[str, Any]]:
    """What a measured case adds to its test's properties (junitxml writes them): its peaks and its verdict."""
    return [("gpu_budget_ram_peak", result.peaks.ram), ("gpu_budget_ram_tree_peak", result.peaks.ram_tree),
            ("gpu_budget_vram_allocated_peak", result.peaks.vram_allocated), ("gpu_budget_verdict", str(result.verdict))]


def note_row(nodeid: str, scenario: str, scale: str, text: str, data: JsonMapping) -> Note:
    """A measured finding that is not one case's peak (gpu_budget.note()); its data is checked JSON-able now, naming
    the test, not when the report is written."""
    try:
        json.dumps(data)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"{nodeid}: gpu_budget.note() data must be JSON-able: {exc}") from None
    return Note(nodeid, scenario, scale, text, data)


def with_store(result: Result, store: Path, recorded: bool) -> Result:
    """A case without a baseline names the file it looked in (or is recorded in), so a store other than the
    project's is seen at once."""
    if result.baseline is None and (result.verdict == Verdict.NO_BASELINE or recorded):
        return result.but(message=f"{result.message} (baseline file {store})")
    return result


def write_pending(data: SessionData, written: Counter[str] | None = None) -> list[str]:
    """The controller writes what its workers measured (staged as the store stages its own writes), one locked write
    per file and scale; the problems met. `written` counts the entries that landed, per file."""
    problems: list[str] = []
    staging = Staging()
    for pending in data.pending:
        staging.stage(PendingWrite.from_json(pending))
    landed = staging.flush(lambda path, exc: problems.append(f"could not write baselines to {path}: {exc}"))
    if written is not None:
        written.update(landed)
    data.pending.clear()
    return problems


def prune(data: SessionData, options: Options) -> None:
    """Drop entries of tests that no longer exist, only when the whole suite was selected (the store's prune)."""
    BaselineStore.of(options.baselines, data.hardware).prune(data.collected, options.scale)


def assets_folder(config: pytest.Config) -> Path:
    """Where prepared assets (checkpoints, clips) are kept: $GPU_BUDGET_ASSETS, else pytest's cache.

    Real-scale checkpoints are gigabytes and take minutes to build; a CI checkout
    wipes the workspace (and pytest's cache in it), so a self-hosted runner points
    GPU_BUDGET_ASSETS at a folder of its own. Assets are keyed by what builds them
    (Scenario.asset_key), so a kept folder is never stale.
    """
    env = os.environ.get("GPU_BUDGET_ASSETS", "").strip()
    if env:
        return Path(env).expanduser().resolve()
    cache = getattr(config, "cache", None)  # absent with -p no:cacheprovider
    return Path(str(cache.mkdir("gpu-budget-assets"))) if cache else Path(str(config.rootpath)) / ".gpu-budget-assets"


def environments_folder(config: pytest.Config, given: Path | None) -> Path:
    """Where the environments cases declare are kept: --gpu-budget-envs, else pytest's cache (kept across runs)."""
    if given is not None:
        return given
    cache = getattr(config, "cache", None)  # absent with -p no:cacheprovider
    return Path(str(cache.mkdir("gpu-budget-envs"))) if cache else Path(str(config.rootpath)) / ".gpu-budget-envs"


def _is_budget_test(item: pytest.Item) -> bool:
    return item.get_closest_marker(MARKER) is not None or "gpu_budget" in getattr(item, "fixturenames", ())


def _markers_outermost_first(item: pytest.Item) -> list[tuple[tuple, dict[str, Any]]]:
    """The item's gpu_budget markers as (args, kwargs): module, class, function, then parametrize marks."""
    by_node: list[tuple[Any, list]] = []
    for node, mark in item.iter_markers_with_node(MARKER):  # closest node first; a node's marks in order
        if not by_node or by_node[-1][0] is not node:
            by_node.append((node, []))
        by_node[-1][1].append((mark.args, mark.kwargs))
    return [marks for _, node_marks in reversed(by_node) for marks in node_marks]
