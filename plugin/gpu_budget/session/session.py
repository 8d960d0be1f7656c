"""One object owns the gate's session and is its pytest plugin: the hooks are its methods.

pytest_plugin.py registers it at configure time (as pytest-memray registers
its manager) and hands it to the `gpu_budget` fixture. It reads each test's
mark and the machine (machine.py), hands them with its options and a child
runner down to case.py (one case) or explore.py (one exploration), keeps
what comes back in its SessionData (data.py, also the xdist payload) and
tells pytest (skip, fail). At the end it writes baselines through the
store, applies the fail-safe and hands the data to outputs.py.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Generator, Sequence
from pathlib import Path

import pytest

from gpu_budget.declare.marks import EXPECTABLE, PROBE, BudgetMark
from gpu_budget.declare.marks import gpu_budget as read_mark
from gpu_budget.declare.marks import merge as merge_marks
from gpu_budget.declare.scenario import Scenario
from gpu_budget.declare.sweep import SweepAxis
from gpu_budget.isolate import forkserver, lifecycle, unix_paths
from gpu_budget.isolate.protocol import RunChild, SnapshotRequest
from gpu_budget.isolate.stopped_wait import WaitStopped
from gpu_budget.judge import failsafe
from gpu_budget.judge.store import BaselineStore, PendingWrite, Staging
from gpu_budget.model.budget import SizeGiven
from gpu_budget.model.json_value import JsonMapping, check_strict
from gpu_budget.model.result import Measurement, Note, Result, Verdict
from gpu_budget.report import junit, revision, terminal
from gpu_budget.requires import MissingDependency
from gpu_budget.search.exploration import Config
from gpu_budget.search.explore import (
    DATABASE_DIR,
    DEFAULT_REAL_RUNS,
    Envelope,
    Exploration,
    budget_to_explore,
    card_budget,
    check_input,
    explore_scenario,
)
from gpu_budget.session import can_run, case, collection, held, listing, outputs, own_rows, param_ids, stopped, unmeasured
from gpu_budget.session.children import ChildRunner
from gpu_budget.session.collection import NOT_ENABLED
from gpu_budget.session.data import Explored, SessionData
from gpu_budget.session.environments import Environments
from gpu_budget.session.folders import assets_folder, environments_folder
from gpu_budget.session.machine import Machine
from gpu_budget.session.options import Options, is_ci
from gpu_budget.session.refusal import gate_frames, or_refuse, refuse
from gpu_budget.session.rootdir_store import moved_line
from gpu_budget.session.said_now import say_now
from gpu_budget.session.sweep import swept
from gpu_budget.session.unwritten import Unwritten

SECTION = "gpu-budget"  # the title of the section a test's report gets, one line per measured case
GATE_FAILED = "gpu-budget gate failed: "  # what the session's failure says, before its problems


def updated(config: pytest.Config, store: BaselineStore, data: SessionData, options: Options) -> list[str]:
    """An update's end: the whole suite prunes the entries no longer measured (named in data.dropped; returns a line
    per file it could not write); a selection drops none, and names those it keeps of the tests it collected whole."""
    finished = collection.finished_cases(data.rows, config.rootpath, options.baselines, data.files)
    if not data.narrowed:
        return store.prune(data.collected, options.scale, finished, data.dropped)
    data.kept = store.unpruned(data.collected, options.scale, finished, collection.whole_scopes(config, list(data.collected)))
    return []


class BudgetSession:
    """Measures each declared case through case.py, keeps the results in its SessionData, writes the outputs."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.options = Options.from_config(config)
        self.ci = is_ci()
        self.data = SessionData()
        self.machine = Machine(self.options, self.data, self.is_worker)
        self.problems: list[str] = []  # session-level failures: the fail-safe, baseline writes
        self.warnings: list[str] = []  # the fail-safe's findings where it does not fail (no CI)
        say = say_now(config)
        self.environments = Environments(lambda: environments_folder(config, self.options.envs),
                                         self.data.environments.append, retry=self.options.update, say=say)
        self.run_child = child_runner(config, self.options, self.environments, say)
        self.written, self.unwritten = Counter[str](), Unwritten()  # entries written per file; the files that failed
        # the commit measured, read before the session writes anything (its baselines would make the tree dirty)
        self.revision = (revision.state(config.rootpath) if self.options.enabled and self.options.json
                         and not self.is_worker else None)
        # an xdist worker or a side's session ends with its starter; this one's helpers and workers end with it
        self.before = gate_start() if self.options.enabled else (None, None)  # SIGTERM as Ctrl-C too

    @property
    def is_worker(self) -> bool:
        return hasattr(self.config, "workerinput")

    # -- collection ---------------------------------------------------------
    def pytest_itemcollected(self, item: pytest.Item) -> None:
        collection.note_item(item, self.data)

    @pytest.hookimpl(tryfirst=True)  # before other hooks add marks or reorder: collection.note_collected
    def pytest_collection_modifyitems(self, config: pytest.Config, items: list[pytest.Item]) -> None:
        collection.note_collected(config, items, self.data, self.options)

    def pytest_deselected(self, items: list[pytest.Item]) -> None:
        collection.note_deselected(items, self.data)

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        """How many budget tests are left to run once deselection is done (the fail-safe's count)."""
        collection.note_selected(session.items, self.data)

    # -- one test's calls (the gpu_budget fixture) ----------------------------
    def mark_for(self, item: pytest.Item) -> BudgetMark:
        """The test's budget, expectation and device, for this session's scale and the device its child runs on."""
        device = self.machine.device()  # the probe child's (no CUDA here): its GPU may be the card= named
        return or_refuse(lambda: read_mark(**merge_marks(collection.markers_outermost_first(item), where=item.nodeid),
                                           scale=self.options.scale, host="cuda" if device.cuda else "cpu",
                                           where=item.nodeid, runner=(device.gpu_name, device.gpu_memory)))

    def _child_for(self, mark: BudgetMark) -> RunChild:
        cpu_only = mark.pinned and mark.device == "cpu"

        def run(scenario: Scenario, snapshot: SnapshotRequest | None = None) -> Measurement:
            self.data.ran_functions |= scenario.command is None  # forked from the forkserver: its preload counts
            return self.run_child(scenario, cpu_only=cpu_only, snapshot=snapshot, card=mark.card)

        return run

    def measure(self, item: pytest.Item, scenario: Scenario, label: str | None = None,
                expect: str | None = None) -> Result:
        __tracebackhide__ = gate_frames  # a refused argument, a failed verdict: at the test's line (refusal.py)
        if not self.options.enabled:
            pytest.skip(NOT_ENABLED)
        unmeasured.asked(item)
        collection.note_measuring(item, self.data)
        refuse_unmeasurable(item, scenario, label, expect)
        mark, machine = self.mark_for(item), self.machine
        one = case.Case.of(item, scenario, label, expect, machine.namesakes(str(item.path)), self.options.baselines,
                           machine.shares_name(item.nodeid))
        outcome = case.run(one, mark, self.options, machine.device(), machine.hardware(), self._child_for(mark),
                           ci=self.ci, worker=machine.worker_seen(scenario.env), store=machine.store())
        result = with_store(outcome.result, outcome.path, recorded=outcome.baseline_write is not None)
        result, stopped_by = with_sweep(result, outcome, scenario, self.options.sweep, self._child_for(mark),
                                     machine.device().cuda)
        own_rows.add(item, self.data.rows, result)
        if outcome.baseline_write:  # written once the test has passed (held.py): the test may still fail after this
            held.hold(item, outcome.baseline_write, result)
        if outcome.skipped:
            pytest.skip(result.message)
        own_rows.judged(item, result)
        item.user_properties.extend(user_properties(result))
        if stopped_by is not None:  # a test's own timeout stopped a wait for its child: the row kept, the test stops
            raise stopped_by
        if not result.passed:
            pytest.fail(terminal.failure_text(result), pytrace=False)  # the detail in the longrepr: junitxml, IDEs
        return result

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(self, item: pytest.Item, call: pytest.CallInfo) -> Generator[None, pytest.TestReport,
                                                                                               pytest.TestReport]:
        """The baseline entries the test measured are written if it passed, else withheld (held.py), and its rows
        get pytest's outcome of it; the call's report gets a "gpu-budget" section: one line per case measured (pytest
        -rA shows it)."""
        test_report = yield
        to_write, withheld = held.settle(item, test_report)
        for entry in to_write:
            self._record(entry.write)
        for entry in withheld:
            withhold(item, self.data, entry)
        outcome = held.outcome_of(item, test_report)
        if outcome is not None:
            own_rows.change(item, self.data.rows, outcome.given)
        rows = own_rows.measured(item)
        if test_report.when == "call" and rows:
            test_report.sections.append((SECTION, "\n".join(terminal.case_line(row) for row in rows)))
        return test_report

    def peak(self, item: pytest.Item, scenario: Scenario) -> Measurement:
        """A measurement neither judged nor recorded: one probe of a search (bisection, exploration)."""
        __tracebackhide__ = gate_frames
        if not self.options.enabled:
            pytest.skip(NOT_ENABLED)
        unmeasured.asked(item)
        refuse_no_scenario(item.nodeid, "peak()", scenario)
        mark = self.mark_for(item)
        skip_or_fail(*can_run.probe_unmeasurable(scenario, mark, self.options.scale, self.machine.device()),
                     self.options.require_gpu)
        measurement = probe(lambda: self._child_for(mark)(scenario, None))
        self.data.probes += 1  # a child ran, even if it crashed
        return measurement

    def explore(self, item: pytest.Item, scenario: Scenario, envelope: Envelope, budget: SizeGiven = None,
                boundary: str | None = None, max_real_runs: int = DEFAULT_REAL_RUNS, seed: int | None = 0,
                estimate: Callable[[Config], int] | None = None) -> Exploration:
        """Explore `scenario` over `envelope` (explore.py), its real runs through peak(); kept in the session's data."""
        __tracebackhide__ = gate_frames
        if not self.options.explore:
            pytest.skip("exploration is opt-in: run with --gpu-budget --gpu-budget-explore")
        unmeasured.asked(item)
        refuse_no_scenario(item.nodeid, "explore()", scenario)
        mark, scale = self.mark_for(item), self.options.scale
        against, cuda, within = explore_against(item, mark, budget, scale)
        or_refuse(lambda: check_input(scenario, envelope, against, scale, boundary, max_real_runs, budget, seed,
                                      estimate), f"{item.nodeid}: explore()")
        found = explore_scenario(scenario, envelope, against, lambda s: self.peak(item, s), scale=self.options.scale,
                                 cuda=cuda, boundary=boundary, max_examples=self.options.explore_examples,
                                 max_real_runs=max_real_runs, seed=seed, estimate=estimate,
                                 database=Path(str(self.config.rootpath)) / DATABASE_DIR,
                                 card=mark.card.label if within else None, verify=not within or mark.device == "cuda")
        self.data.explorations.append(Explored(item.nodeid, found))
        item.user_properties.append(("gpu_budget_exploration", found.to_json()))
        return found

    def note(self, item: pytest.Item, scenario: Scenario, text: str, data: JsonMapping) -> None:
        __tracebackhide__ = gate_frames
        own_rows.add_note(item, self.data.notes, note_row(item.nodeid, scenario, self.options.scale, text, data))

    def _record(self, write: PendingWrite) -> None:
        """Write a baseline entry now; an xdist worker ships it to the controller, which alone writes (as JSON). It
        runs as the test reports, so a write that fails is the gate's problem, named once per file (write_pending)."""
        store = self.machine.store()
        write = store.with_packages(write)
        if self.is_worker:
            self.data.pending.append(write)
        else:
            store.stage(write)
            self.written.update(store.flush(lambda path, exc: self.unwritten.note(path, exc, [write.row])))

    # -- end of session -----------------------------------------------------
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        """Serial run or xdist controller: write baselines and outputs, apply the fail-safe (a worker's xdist.py ships its data)."""
        self.environments.close()
        if self.is_worker:
            return
        self.problems.extend(write_pending(self.data, self.written, self.unwritten))  # the serial run's failures too
        if self.options.update and (store := self.machine.known_store()) is not None:
            self.problems.extend(updated(self.config, store, self.data, self.options))
        if self.options.enabled and not listing.lists_only(self.config):  # a listing measures nothing, by design
            found = self._nothing_measured((why := stopped.interrupted(self.config, session.exitstatus)) is not None)
            (self.problems if self.ci or self.options.require_gpu else self.warnings).extend(found)
            self.problems.extend(filter(None, [failsafe.xfailed_without_baseline(self.data.rows)]))
            outputs.write_files(self.data, self.options, self.problems, self.revision, why, self.written)
        if self.problems:
            session.shouldfail = session.shouldfail or GATE_FAILED + "; ".join(self.problems)
            if session.exitstatus == pytest.ExitCode.OK:
                session.exitstatus = pytest.ExitCode.TESTS_FAILED

    def pytest_unconfigure(self) -> None:
        junit.record_gate_failure(self.config, GATE_FAILED, self.problems)  # the XML the session's end wrote
        if self.options.enabled:
            forkserver.stop()  # now, not just after this process: nothing of the session outlives it
            lifecycle.hand_back(self.before)  # an in-process session (pytester) leaves os.environ as it was

    def _nothing_measured(self, interrupted: bool) -> list[str]:
        opts, store = self.options, self.machine.known_store()

        def cuda() -> bool:
            device = self.data.device or self.machine.device_quietly(self.problems)
            return device is not None and device.cuda

        return failsafe.nothing_measured(
            selected=self.data.selected, rows=self.data.rows, probes=self.data.probes, require_gpu=opts.require_gpu,
            ci=self.ci, update=opts.update, folder=self.machine.folder(), collected=sum(map(len, self.data.collected.values())),
            hardware_key=None if store is None else store.hardware_key, cuda=cuda, interrupted=interrupted,
            without_rows=failsafe.without_rows_in(self.problems))

    def pytest_terminal_summary(self, terminalreporter: pytest.TerminalReporter) -> None:
        outputs.terminal_summary(terminalreporter, self.data, self.options, self.problems, self.warnings,
                                 self.machine.pinned_gpu, self.written, stopped.as_asked(self.config, self.data),
                                 moved_line(self.config, self.options.baselines, self.written, Path.cwd()))


def child_runner(config: pytest.Config, options: Options, environments: Environments,
                 say: Callable[[str], None]) -> Callable[..., Measurement]:
    """A gated session's ChildRunner, made at its start (a GPU_BUDGET_ASSETS that cannot be a folder stops it there).
    A session without the gate measures nothing: its runner is made at a first call, which never comes, so pytest's
    cache gets no empty assets folder (cache.mkdir makes the folder it names) from every plain `pytest`."""
    if options.enabled:
        return ChildRunner(options, assets_folder(config, True), environments, say)
    return lambda *args, **kwargs: ChildRunner(options, assets_folder(config, False), environments, say)(*args, **kwargs)


def withhold(item: pytest.Item, data: SessionData, entry: held.Held) -> None:
    """An entry whose test did not pass is never written: its row says so, and the summary names it. The row is found
    by its node id, not as held: the call's report may have given it pytest's outcome since (held.settle)."""
    nodeid = entry.row.nodeid
    own_rows.change(item, data.rows, lambda r: held.withheld_row(r) if r.nodeid == nodeid else r)
    data.withheld.append(nodeid)


def gate_start() -> tuple[str | None, object | None]:
    """A gated session's start: a temporary folder too long for the gate's Unix sockets (unix_paths.py) stops it
    before any child starts, naming it, instead of failing every case with a bare "AF_UNIX path too long"; then
    lifecycle.take_over() (its owner adopted, SIGTERM as Ctrl-C), whose return is what it replaced."""
    try:
        unix_paths.check()
    except unix_paths.SocketPathTooLong as exc:
        raise pytest.UsageError(str(exc)) from None
    return lifecycle.take_over()


def with_sweep(result: Result, outcome: case.Outcome, scenario: Scenario, sweep: Sequence[SweepAxis] | None,
               run: RunChild, cuda: bool) -> tuple[Result, BaseException | None]:
    """The case's row with the releases of --gpu-budget-sweep measured beside it (never judged), and what stopped a
    wait for one of its children (a test's own timeout: isolate/stopped_wait.py), raised once the row is kept."""
    if outcome.stopped is not None or not sweep or (result.measurement is None and not outcome.unmade):
        return result, outcome.stopped
    try:
        return swept(result, scenario, sweep, run, cuda, outcome.unmade), None
    except WaitStopped as stop:
        return result, stop.cause


def probe(run: Callable[[], Measurement]) -> Measurement:
    """A probe's measured child: a missing package skips it; a test's own timeout stops the test as it was told (a
    probe has no row)."""
    try:
        measurement = run()
    except MissingDependency as exc:
        pytest.skip(str(exc))
    except WaitStopped as stop:
        raise stop.cause from None
    if measurement.error_kind == "missing-dependency":
        pytest.skip(measurement.error.message)
    return measurement


def explore_against(item: pytest.Item, mark: BudgetMark, budget: SizeGiven, scale: str) -> tuple[int | str, bool, bool]:
    """The budget an exploration searches against, whether it is CUDA memory, and whether it is the test's card's (the
    card's memory where no budget= is given: estimated anywhere, run capped on a GPU); skipped where there is none."""
    within = or_refuse(lambda: card_budget(mark, budget, item.nodeid))
    cuda = mark.device == "cuda" or within is not None
    against, why_not = within or or_refuse(lambda: budget_to_explore(
        budget, mark.budget.vram if cuda else mark.budget.ram, scale, mark.device), f"{item.nodeid}: explore()")
    if why_not:
        pytest.skip(why_not)
    return against, cuda, within is not None


def refuse_unmeasurable(item: pytest.Item, scenario: Scenario, label: str | None, expect: str | None = None) -> None:
    """Fail a measure() call the gate cannot judge: no Scenario, an unknown expectation, a label that is no string or
    not one line with no space at either end, a probe's test (--gpu-budget-probes would hide its verdict), a Scenario parameter numbered by place (param_ids.py), or
    a label the test already measured under (two cases would share one baseline entry). Each fails at the test's
    line that called measure(), naming the argument and its value (refusal.py)."""
    __tracebackhide__ = gate_frames
    refuse_no_scenario(item.nodeid, "measure()", scenario)
    if expect is not None and expect not in EXPECTABLE:  # else a typo is judged as no expectation: a lost one passes
        refuse(f"{item.nodeid}: measure() expect={expect!r} is not one of {EXPECTABLE} (or None: the marker's)")
    if label is not None and not isinstance(label, str):
        refuse(f"{item.nodeid}: measure() label={label!r} is not a string: it names the case's row and baseline entry")
    # "x\ny" breaks the table's row, " " reads as none, "" was taken for none (None is)
    if label is not None and (not label or not label.isprintable() or label != label.strip()):
        refuse(f"{item.nodeid}: measure() label={label!r} is not one line of text with no space at either end: it "
               "names the case's row and baseline entry")
    if item.get_closest_marker(PROBE) is not None:
        refuse(f"{item.nodeid}: marked {PROBE}, an unjudged probe, but measure() judges: measure with peak(), or drop "
               "the marker")
    param_ids.refuse_shared(item)
    if any((row.label or None) == (label or None) for row in own_rows.measured(item)):
        which = "without a label" if not label else f"with label={label!r}"
        refuse(f"{item.nodeid}: measure() called twice {which}: each measurement of a test is a baseline entry of its "
               "own, so give each call a label= of its own")


def refuse_no_scenario(nodeid: str, call: str, scenario: object) -> None:
    """Fail a call of the fixture given no Scenario (a name, a dict) at the test's line, naming what it got, instead of
    an AttributeError from deep in the gate's code."""
    __tracebackhide__ = gate_frames
    if not isinstance(scenario, Scenario):
        refuse(f"{nodeid}: {call} takes a gpu_budget.Scenario, got {scenario!r}")


def skip_or_fail(reason: str | None, needs_gpu: bool, require_gpu: bool) -> None:
    """Skip a probe that cannot run here, with the reason; fail it where the runner must have the GPU it lacks."""
    if reason and needs_gpu and require_gpu:
        pytest.fail(failsafe.required(reason), pytrace=False)
    if reason:
        pytest.skip(reason)


def user_properties(result: Result) -> list[tuple[str, int | str]]:
    """What a measured case adds to its test's properties (junitxml writes them): its row's name first (a test of
    several cases repeats the names below, once per case), its peaks, its verdict and, for a reproduction, the verdict
    it expects (an "over-budget" that passes its test); a peak not measured (no CUDA, a child that died first) is
    left out, as junitxml would write Python's "None" where a number is read."""
    named = [("gpu_budget_case", result.nodeid), ("gpu_budget_ram_peak", result.peaks.ram),
             ("gpu_budget_ram_tree_peak", result.peaks.ram_tree),
             ("gpu_budget_vram_allocated_peak", result.peaks.vram_allocated), ("gpu_budget_verdict", str(result.verdict)),
             ("gpu_budget_expect", result.expect)]
    return [(name, value) for name, value in named if value is not None]


def note_row(nodeid: str, scenario: Scenario, scale: str, text: str, data: JsonMapping) -> Note:
    """A measured finding that is not one case's peak (gpu_budget.note()); its scenario, text (words: the report and
    FINDINGS.md write it) and data (JSON-able, finite) are checked now, naming the test and the value, not when the
    report is written."""
    __tracebackhide__ = gate_frames
    refuse_no_scenario(nodeid, "note()", scenario)
    if not isinstance(text, str) or not text.strip():
        refuse(f"{nodeid}: gpu_budget.note() text={text!r}: expected the finding in words, a non-empty string")
    for key, value in data.items():
        try:
            check_strict(value, text_keys=False)  # NaN, inf: json would write what no strict reader reads
        except (TypeError, ValueError) as exc:
            bad = f"{nodeid}: gpu_budget.note() data must be JSON-able: {key}={value!r}: {exc}"
            break
    else:
        return Note(nodeid, scenario.name, scale, text, data)
    refuse(bad)  # outside the except: no "during handling of the above exception"


def with_store(result: Result, store: Path | None, recorded: bool) -> Result:
    """A case without a baseline names the file it looked in (or is recorded in), so a store other than the
    project's is seen at once; every row with a file holds it (the JSON report's baseline_file)."""
    if store is None:
        return result
    if result.baseline is None and (result.verdict == Verdict.NO_BASELINE or recorded):
        result = result.but(message=f"{result.message} (baseline file {store})")
    return result.but(baseline_file=str(store))


def write_pending(data: SessionData, written: Counter[str] | None = None, unwritten: Unwritten | None = None) -> list[str]:
    """The controller writes what its workers measured (staged as the store stages its own writes), one locked write
    per file and scale; the files it could not write, one problem each (`unwritten`'s: a serial session's holds its
    own failed writes too), and the rows of the entries they lost say so. `written` counts the entries that landed, per file."""
    unwritten = Unwritten() if unwritten is None else unwritten
    staging, rows, count = Staging(), {}, Counter()
    for pending in data.pending:
        staging.stage(pending)
        rows.setdefault(pending.path, []).append(pending.row)
        count[pending.path] += 1
    landed = staging.flush(lambda path, exc: unwritten.note(path, exc, rows[path], count[path]))
    if written is not None:
        written.update(landed)
    data.pending.clear()
    data.rows[:] = [unwritten.given(row) for row in data.rows]
    return unwritten.problems()

