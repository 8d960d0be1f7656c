"""One case, from its mark to its Result: can it run here, its child, its verdict, its baseline entry.

Everything it needs comes in as arguments (the mark, the options, the device
and hardware read once per session, the baseline store, a function that runs
a child); it returns an Outcome and never reaches back into the session, which
records the Outcome and tells pytest (skip, fail). The steps, in order:
precheck (can_run.py), measure, judge (case_setup.py finds the baseline),
record (recording.py for several runs), extras (remediation, a snapshot).
"""

from __future__ import annotations

import datetime
import sys
from collections.abc import Callable
from dataclasses import dataclass, replace
from functools import cached_property
from pathlib import Path

import pytest

from gpu_budget.declare.fixes import FixError
from gpu_budget.declare.marks import BudgetMark, expectation_problem
from gpu_budget.declare.scenario import Scenario
from gpu_budget.isolate.environment import EnvironmentFailed
from gpu_budget.isolate.forkserver import PrepareFailed
from gpu_budget.isolate.importable import importable_in
from gpu_budget.isolate.program import OutsideEnvironment
from gpu_budget.isolate.protocol import RunChild
from gpu_budget.isolate.remote import RemoteFailed
from gpu_budget.isolate.stopped_wait import WaitStopped, stopper
from gpu_budget.judge import baselines, keys
from gpu_budget.judge.compare import judge, world_setup
from gpu_budget.judge.failsafe import required
from gpu_budget.judge.store import BaselineStore, PendingWrite
from gpu_budget.measure.device import DeviceInfo
from gpu_budget.model.case_id import CaseId
from gpu_budget.model.entry import Entry
from gpu_budget.model.hardware import Hardware
from gpu_budget.model.json_value import JsonMapping
from gpu_budget.model.result import RE_SPREAD, Measurement, Result, Verdict
from gpu_budget.model.room import Room
from gpu_budget.model.setup import Fact
from gpu_budget.report import artifacts
from gpu_budget.report.terminal import remediation_text
from gpu_budget.requires import MissingDependency
from gpu_budget.search import remediate
from gpu_budget.session.can_run import (
    environment_skips,
    imbalance_unmeasured,
    none_here,
    unchecked_budget,
    unchecked_vram,
    unmeasurable,
    vram_unchecked,
    vram_unmeasured,
)
from gpu_budget.session.case_setup import ran_as_on, recorded_command, stored
from gpu_budget.session.held import withheld_row
from gpu_budget.session.options import Options
from gpu_budget.session.recording import record_runs, recorded_text, snapshot_run
from gpu_budget.session.repeats import case_name


@dataclass(frozen=True)
class Case:
    """One measure() call: the test (node id, module, name), the scenario, its label and expectation."""

    nodeid: str
    module: str
    name: str
    scenario: Scenario
    label: str | None = None
    expect: str | None = None  # None: the mark's
    namesakes: tuple[str, ...] = ()  # the session's other test files of this module's stem and baseline file
    baselines: Path | None = None  # the baselines folder, which the key's file path is relative to (keys.module_path)
    shared_name: bool = False  # another test of the session has this one's file name (Machine.shares_name)

    @classmethod
    def of(cls, item: pytest.Item, scenario: Scenario, label: str | None, expect: str | None,
           namesakes: tuple[str, ...], baselines: Path | None = None, shared_name: bool = False) -> Case:
        return cls(item.nodeid, str(item.path), case_name(item), scenario, label, expect, namesakes, baselines,
                   shared_name)

    @cached_property
    def id(self) -> CaseId:
        """Which case this is, with its key in its module's baseline file (model/case_id.py)."""
        return keys.case_of(self.nodeid, self.module, self.name, self.label, self.baselines)


@dataclass(frozen=True)
class Outcome:
    """The judged Result, the baseline entry to write when the verdict records one, and the baseline file the case
    was judged against (None: it ended before its baseline was looked up)."""

    result: Result
    baseline_write: PendingWrite | None = None
    path: Path | None = None
    unmade: str = ""  # why its own environment could not be made (an error, not a skip): a sweep's others still run
    stopped: BaseException | None = None  # what stopped a wait for one of its children (a test's own timeout): the
    # session raises it again once the row is kept (isolate/stopped_wait.py)

    @property
    def skipped(self) -> bool:
        return self.result.verdict == Verdict.SKIPPED


@dataclass(frozen=True)
class Ask:
    """What every step of one case reads: the case, its mark (the case's expectation applied), the session's options,
    device, hardware and baseline store, and the function that runs a measured child."""

    case: Case
    mark: BudgetMark
    options: Options
    device: DeviceInfo
    hardware: Hardware
    store: BaselineStore
    run_child: RunChild
    ci: bool


@dataclass(frozen=True)
class Judged:
    """A measured case past its verdict: the row as asked and as judged, the baseline it was judged against, the
    fingerprint an entry of this run records, its baseline file, and whether the verdict records an entry."""

    asked: Result
    result: Result
    measurement: Measurement
    baseline: Entry | None
    fingerprint: dict[str, Fact]
    path: Path
    write_baseline: bool


def run(case: Case, mark: BudgetMark, options: Options, device: DeviceInfo, hardware: Hardware, run_child: RunChild, *,
        ci: bool, worker: JsonMapping | None = None, store: BaselineStore | None = None) -> Outcome:
    """Measure the case in a child where it can run here, judge it against its budget and baseline: the steps in
    order, each ending the case early with its Outcome where it decides. `store`: the session's (None: this
    hardware's under --gpu-budget-baselines)."""
    expect = case.expect if case.expect is not None else mark.expect
    store = store if store is not None else BaselineStore.of(options.baselines, hardware)
    ask = Ask(case, replace(mark, expect=expect), options, device, hardware, store, run_child, ci)
    checked = precheck(ask, asked_row(ask, worker))
    if isinstance(checked, Outcome):
        return checked
    ask, asked = checked
    try:
        measured = measure(ask, asked)
    except WaitStopped as stop:
        return stopped_measuring(ask, asked, stop)
    if isinstance(measured, Outcome):
        return measured
    asked = asked.but(card=ran_as_on(mark), card_key=ran_as_on(mark, key=True))  # a child ran, under the card's cap where it ran on CUDA
    judged = judge_case(ask, asked, measured)
    if isinstance(judged, Outcome):
        return judged
    if judged.result.verdict == Verdict.SKIPPED:  # died in a memory smaller than its budget: nothing to record
        return Outcome(judged.result, path=judged.path)
    try:
        recorded = record(ask, judged)
        if isinstance(recorded, Outcome):
            return recorded
        result, write = recorded
        return Outcome(extras(ask, result, judged), write, judged.path)
    except WaitStopped as stop:  # a recording run, a remedy's trial, a snapshot run: the judged row, failed
        why = f"a further run of it was {stop_text(stop)}, so no baseline entry was written"
        return stopped_row(judged, stop, withheld_row(judged.result, why).message)


def stop_text(stop: WaitStopped) -> str:
    return f"stopped by an exception raised in the test's process ({stopper(stop.cause)})"


def stopped_row(judged: Judged, stop: WaitStopped, message: str) -> Outcome:
    """A judged case whose wait for one of its children was stopped (a test's own timeout): its row an error saying
    `message`, nothing recorded, and the stop for the session to raise again once the row is kept."""
    return Outcome(judged.result.but(verdict=Verdict.ERROR, passed=False, message=message), path=judged.path,
                   stopped=stop.cause)


def stopped_measuring(ask: Ask, asked: Result, stop: WaitStopped) -> Outcome:
    """The row of a case whose child's wait was stopped (a test's own timeout): what the child had measured, judged
    (a failure that records nothing), or where nothing was, an error saying what stopped it."""
    if stop.measurement is None:
        return Outcome(asked.but(verdict=Verdict.ERROR, message=f"{stop_text(stop)} before anything of the case was "
                                                                "measured"), stopped=stop.cause)
    judged = judge_case(ask, asked.but(card=ran_as_on(ask.mark), card_key=ran_as_on(ask.mark, key=True)),
                        stop.measurement)
    if isinstance(judged, Outcome):
        return replace(judged, stopped=stop.cause)
    if not judged.result.passed:
        return Outcome(judged.result, path=judged.path, stopped=stop.cause)
    return stopped_row(judged, stop, f"{judged.result.message}; then its wait was {stop_text(stop)}")


def asked_row(ask: Ask, worker: JsonMapping | None) -> Result:
    """The row as asked, before anything ran: an error until a step says otherwise (the card it ran as on comes once a
    child ran)."""
    case, mark, scale = ask.case, ask.mark, ask.options.scale
    params = case.scenario.params_for(scale) if scale in case.scenario.scales else None  # none: a scale it skips
    return Result(nodeid=case.id.row_nodeid, scenario=case.scenario.name,
                  scale=scale, verdict=Verdict.ERROR, passed=False, message="", label=case.label,
                  fixes=tuple(case.scenario.fixes), params=params, device=mark.device, budget=mark.budget,
                  expect=mark.expect, budget_origin=mark.origin,
                  tolerance=mark.tolerance, worker=worker)


def precheck(ask: Ask, asked: Result) -> Outcome | tuple[Ask, Result]:
    """Whether the case can be measured here (else its skip or error); a VRAM budget this host cannot check is taken
    off the mark, and the row says so."""
    mark, options = ask.mark, ask.options
    reason, needs_gpu = unmeasurable(ask.case.scenario, mark, options.scale, ask.device)
    unchecked = vram_unchecked(mark, ask.device)
    if unchecked:  # whatever comes of the case, its row names the VRAM budget declared (a card's: its memory)
        asked = asked.but(budget=replace(mark.budget, vram=unchecked_vram(mark)))
    if unchecked and not reason and options.require_gpu:  # the error is the budget left unchecked: its column says so
        reason, needs_gpu = f"{unchecked_budget(mark, ask.device)} needs a CUDA GPU to check; {none_here(ask.device)}", True
        asked = asked.but(unchecked=(unchecked,))
    if reason and needs_gpu and options.require_gpu:
        return Outcome(asked.but(verdict=Verdict.ERROR, message=required(reason)))
    if reason:
        return Outcome(asked.but(verdict=Verdict.SKIPPED, passed=True, message=reason))
    if unchecked:  # judged on what this host measures: the row's VRAM budget unchecked
        ask = replace(ask, mark=replace(mark, budget=replace(mark.budget, vram=None)))
        asked = asked.but(unchecked=(unchecked,))
    problem = expectation_problem(ask.mark, options.scale)
    if problem:
        return Outcome(asked.but(verdict=Verdict.ERROR, message=problem))
    return ask, asked


def measure(ask: Ask, asked: Result) -> Outcome | Measurement:
    """The case's measured child, or the Outcome of a child that could not run (a missing package skips)."""
    try:
        measurement = ask.run_child(ask.case.scenario, None)
    except MissingDependency as exc:  # in prepare: an optional package that cannot be imported here
        return Outcome(asked.but(verdict=Verdict.SKIPPED, passed=True, message=str(exc)))
    except EnvironmentFailed as exc:  # never measured in the running environment instead
        skip = environment_skips(exc, ask.device)
        return Outcome(asked.but(verdict=Verdict.SKIPPED if skip else Verdict.ERROR, passed=skip,
                                 message=f"its environment cannot be made: {exc}"), unmade="" if skip else str(exc))
    except (RemoteFailed, PrepareFailed) as exc:
        return Outcome(asked.but(verdict=Verdict.ERROR, message=str(exc)))
    except OutsideEnvironment as exc:  # its command would run the running packages, not its environment's
        return Outcome(asked.but(verdict=Verdict.ERROR, message=f"its environment cannot run this command: {exc}"))
    if measurement.error_kind == "missing-dependency":
        return Outcome(asked.but(verdict=Verdict.SKIPPED, passed=True, message=measurement.error.message))
    return measurement


def judge_case(ask: Ask, asked: Result, measurement: Measurement) -> Outcome | Judged:
    """The measurement against the budget and the stored baseline (an unreadable baseline file is the case's error)."""
    case, mark, options = ask.case, ask.mark, ask.options
    found = stored(case.id, case.scenario, case.namesakes, mark, options, ask.hardware, ask.store,
                   measurement.environment)
    baseline = found.entry
    setup = world_setup(found.setup, measurement, baseline)  # the launch's world, as the verdict and the row say it
    if found.broken:
        return Outcome(asked.but(measurement=measurement, verdict=Verdict.ERROR, message=found.broken), path=found.path)
    unmeasured = vram_unmeasured(case.scenario, mark, measurement) or imbalance_unmeasured(mark, measurement)
    if unmeasured:
        return Outcome(asked.but(measurement=measurement, verdict=Verdict.ERROR, message=unmeasured), path=found.path)
    verdict = judge(measurement, mark.budget, baseline, mark.tolerance, ci=ask.ci, update=options.update,
                    expect=mark.expect, setup=setup, params=case.scenario.params_for(options.scale), steps=mark.steps,
                    scenario=case.scenario.name, command=recorded_command(case.id, case.scenario), room=room(mark, ask.device))
    result = asked.but(
        measurement=measurement, verdict=verdict.verdict, passed=verdict.passed,
        message=said(asked.unchecked, verdict.message, verdict.passed), change=verdict.change,
        growth_projection=None if verdict.projection is None else verdict.projection.record(),
        baseline=baseline,
        fingerprint_changed=tuple(setup.described) if baseline else (),
        setup=setup if baseline else None)
    return Judged(asked, result, measurement, baseline, found.fingerprint, found.path, verdict.write_baseline)


def said(unchecked: tuple[str, ...], message: str, passed: bool) -> str:
    """A row's message: a failure's reason first (pytest's short summary cuts it at the terminal's width), then what
    went unchecked; a pass's note of an unchecked budget first, so a green row does not read as VRAM checked."""
    return "; ".join([message, *unchecked] if not passed else [*unchecked, message])


def room(mark: BudgetMark, device: DeviceInfo) -> Room:
    """The memory the case's child could hold: this host's (device.host_memory), and the card's cap where it ran as on
    one, else the GPU's total."""
    card = mark.card if mark.card is not None and mark.device == "cuda" else None
    if card is not None:
        return Room(device.host_memory, card.capacity, card.label)
    return Room(device.host_memory, device.gpu_memory if device.cuda else None)


def record(ask: Ask, judged: Judged) -> Outcome | tuple[Result, PendingWrite | None]:
    """The row and the baseline entry this verdict records (over --gpu-budget-record-runs fresh runs), if any; a
    recording run that failed ends the case an error, recording nothing."""
    options, result, baseline = ask.options, judged.result, judged.baseline
    respread = options.update and result.passed and baseline is not None and options.record_runs > 1 and \
        (baseline.spread.runs if baseline.spread is not None else 1) != options.record_runs
    if not (judged.write_baseline or respread) or not judged.measurement.ok:
        return result, None
    scenario, scale, path = ask.case.scenario, options.scale, judged.path
    kept, spread, failed = record_runs(scenario, ask.run_child, judged.measurement, options.record_runs)
    if failed:
        return Outcome(judged.asked.but(measurement=judged.measurement, verdict=Verdict.ERROR, message=failed),
                       path=path)
    entry = baselines.entry_from(kept, scenario.to_json(scale), ask.mark.tolerance, judged.fingerprint,
                                 datetime.date.today().isoformat(), spread,
                                 recorded_command(ask.case.id, scenario))
    write = PendingWrite(str(path), scale, ask.case.id.key, entry, row=result.nodeid)
    message = result.message
    if spread is not None:
        message = (message if judged.write_baseline else f"{message}; {RE_SPREAD}") + "; " + \
            recorded_text(kept, spread)
    return result.but(message=message), write


def own_environment(measurement: Measurement) -> Callable[[str], bool] | None:
    """Whether a fix's package is found in the environment the case ran in, where it is one of its own (a venv over
    the running one): its fixes are that environment's to run; None (this interpreter) where it is the running one."""
    env = measurement.environment
    return importable_in(env.python) if env is not None and env.python and env.python != sys.executable else None


def extras(ask: Ask, result: Result, judged: Judged) -> Result:
    """What a judged row gets beside its verdict: the cheapest passing fixes (--gpu-budget-remediate), the memory
    snapshot of a failing CUDA case (--gpu-budget-snapshot=rerun)."""
    options, mark, measurement = ask.options, ask.mark, judged.measurement
    recorded = judged.baseline.spread if judged.baseline is not None else None  # as the gate judged the case's growth
    if options.remediate and remediate.needs_remedy(measurement, mark.budget, mark.steps, recorded):
        def trial(candidate: Scenario) -> remediate.Trial:
            return remediate.trial_outcome(ask.run_child(candidate, None), mark.budget, mark.steps, recorded)

        try:
            remedy = remediate.search(ask.case.scenario, trial, cuda=mark.device == "cuda",
                                      max_runs=options.remediate_max_runs, scale=options.scale,
                                      installed=own_environment(measurement),
                                      as_is=remediate.trial_outcome(measurement, mark.budget, mark.steps, recorded))
        except FixError as exc:  # a fix naming no fix (a misspelt conflicts=): no answer could be trusted; the row kept
            return result.but(verdict=Verdict.ERROR, passed=False, message=f"{result.message}; remediation not "
                                                                           f"searched: {exc}")
        message = result.message if result.passed else f"{result.message}; {remediation_text(remedy, result)}"
        result = result.but(remediation=remedy, message=message)
    stored = judged.baseline.peaks if judged.baseline else None
    if not result.passed and options.snapshot == "rerun" and artifacts.wants_snapshot(measurement, mark, stored):
        snapshot = snapshot_run(ask.case.scenario, ask.run_child, options.snapshots, result.nodeid,
                                ask.case.shared_name)
        result = result.but(snapshot_run=snapshot.run, **({"snapshot": snapshot.kept} if snapshot.kept else {}))
        if snapshot.lost:
            result = result.but(message=f"{result.message}; {snapshot.lost}")
    return result


