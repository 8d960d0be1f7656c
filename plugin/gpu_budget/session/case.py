"""One case, from its mark to its Result: can it run here, its child, its verdict, its baseline entry.

Everything it needs comes in as arguments (the mark, the options, the device
and setup read once per session, a function that runs a child); it returns an
Outcome and never reaches back into the session, which records the Outcome and
tells pytest (skip, fail).
"""

from __future__ import annotations

import datetime
import os
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from gpu_budget.declare.marks import BudgetMark, expectation_problem
from gpu_budget.declare.scenario import Scenario
from gpu_budget.isolate import command
from gpu_budget.isolate.environment import EnvironmentFailed
from gpu_budget.isolate.remote import RemoteFailed
from gpu_budget.judge import baselines, files, fingerprint, keys
from gpu_budget.judge.compare import judge
from gpu_budget.judge.store import BaselineStore, PendingWrite
from gpu_budget.model.entry import Entry, Spread
from gpu_budget.model.result import EnvironmentRecord, Measurement, Result, SnapshotRun, Verdict
from gpu_budget.report import artifacts
from gpu_budget.report.terminal import remediation_text
from gpu_budget.requires import MissingDependency
from gpu_budget.search import remediate
from gpu_budget.session.children import malloc_mode
from gpu_budget.session.options import Options
from gpu_budget.units import format_size

# runs a scenario in a measured child: (scenario, snapshot request or None) -> Measurement
RunChild = Callable[[Scenario, "dict | None"], Measurement]


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

    @property
    def key(self) -> str:
        """The case's key in its module's baseline file (keys.py): the file's path from its project root, the name,
        the label."""
        return keys.case_key(self.module, self.name, self.label)


@dataclass(frozen=True)
class Outcome:
    """The judged Result, and the baseline entry to write ({path, scale, id, entry: a baselines.Entry}) when the
    verdict records one."""

    result: Result
    baseline_write: dict[str, Any] | None = None

    @property
    def skipped(self) -> bool:
        return self.result.verdict == Verdict.SKIPPED


def unmeasurable(scenario: Scenario, mark: BudgetMark, scale: str, device: dict[str, Any]) -> tuple[str | None, bool]:
    """Why this case cannot be measured on `device` (forkserver.probe's), and whether the reason is a missing GPU."""
    if scale not in scenario.scales:
        return f"scenario {scenario.name!r} has no {scale!r} scale (it has: {', '.join(scenario.scales)})", False
    if mark.pinned and mark.device == "cpu" and (scenario.needs_cuda(scale) or mark.budget.vram is not None):
        return (f"the test pins device='cpu', but scenario {scenario.name!r} at scale {scale!r} needs CUDA "
                "or has a VRAM budget: nothing on the GPU would be measured"), False
    if scenario.needs_cuda(scale) and not device["cuda"]:
        return f"scenario {scenario.name!r} at scale {scale!r} needs a CUDA GPU; this host has none", True
    if mark.pinned and mark.device == "cuda" and not device["cuda"]:
        return "the test pins device='cuda'; this host has no CUDA GPU", True
    if mark.budget.vram is not None and not device["cuda"] and mark.expect == "over-budget" and mark.budget.ram is None:
        return (f"expect='over-budget' rests on the VRAM budget {format_size(mark.budget.vram)} alone, which needs a "
                "CUDA GPU to check; this host has none"), True
    needed = scenario.gpus_needed
    if needed > 1 and device["cuda"] and device.get("gpus", 1) < needed:
        each = "one GPU each" if needed == scenario.ranks else f"on {needed} GPUs"
        return (f"scenario {scenario.name!r} launches {scenario.ranks} ranks, {each}; this worker measures on "
                f"{device.get('gpus', 1)} (give each worker {needed}: --gpu-budget-gpus-per-worker="
                f"{needed}, on a host with that many GPUs per xdist worker)"), True
    card = device.get("gpu_memory")
    if mark.budget.vram is not None and card and mark.budget.vram > card:
        return (f"VRAM budget {format_size(mark.budget.vram)} is above this GPU's total memory {format_size(card)} "
                f"({device.get('gpu_name')}): the card cannot reach it, so the budget would test nothing (an "
                "over-budget run dies of out-of-memory first); it is measured on a card with more memory"), False
    return None, False


def probe_unmeasurable(scenario: Scenario, mark: BudgetMark, scale: str, device: dict[str, Any]) -> tuple[str | None, bool]:
    """unmeasurable() for an unjudged probe (peak()): a probe under a VRAM budget compares GPU figures, which a host
    without CUDA never reports, so there it is skipped rather than run on the CPU."""
    reason, needs_gpu = unmeasurable(scenario, mark, scale, device)
    if reason is None and vram_unchecked(mark, device):
        return (f"VRAM budget {format_size(mark.budget.vram)} needs a CUDA GPU to measure; this host has none (an "
                "unjudged probe under it compares GPU figures)"), True
    return reason, needs_gpu


def vram_unchecked(mark: BudgetMark, device: dict[str, Any]) -> str | None:
    """Why the mark's VRAM budget is not checked on this host, or None: on a host without CUDA the case trains on the
    CPU, so its host RAM is gated and the row says the VRAM budget was not (no GPU figure comes from a CPU host)."""
    if mark.budget.vram is None or device["cuda"]:
        return None
    return (f"VRAM budget {format_size(mark.budget.vram)} not checked: this host has no CUDA GPU (the case ran on "
            "the CPU; host RAM is gated)")


def vram_unmeasured(scenario: Scenario, mark: BudgetMark, measurement: Measurement) -> str | None:
    """Why a VRAM budget tested nothing on a run that finished on a GPU host, or None: a command whose processes
    reported no GPU figure (its own code never initialised CUDA, or the gate's hook never ran in it) would
    otherwise pass a VRAM budget with no figure behind the verdict."""
    if mark.budget.vram is None or not measurement.ok or measurement.peaks.vram_allocated is not None:
        return None
    whose = ("its ranks' processes" if scenario.ranks > 1 else "its own process") if scenario.command is not None \
        else "its run"
    return (f"VRAM budget {format_size(mark.budget.vram)}, but no GPU figure was measured: {whose} never initialised "
            "CUDA (it trained on the CPU?), or the gate's hook did not run there (the row's message and info say "
            "which), so the budget would test nothing")


def fingerprint_for(hardware: dict[str, Any], scenario: Scenario, malloc: str, where: str = "", device: str | None = None,
                    environment: EnvironmentRecord | None = None, root: Path | None = None) -> dict[str, Any]:
    """The fingerprint a baseline entry of this case stores: the session's, with the case's allocator mode and device;
    a command case adds the environment its command runs under (the pins, and the scenario's own env, which wins,
    a path in it under `root`, the test file's project root, written from there: another checkout of the project
    records the same);
    a case in an environment of its own, the versions that environment lays over the running ones."""
    fprint = {k: v for k, v in hardware.items() if k not in ("key", "package_versions")}
    if environment is not None:
        fprint["environment"] = environment.described or None
        fprint.update({k: v for k, v in environment.overlay.items() if k in fingerprint.LIBRARY_PACKAGES})
    mode = malloc_mode(scenario, malloc, where)
    if scenario.command is not None:
        env = command.recorded_env(hardware.get("threads", 1), mode, dict(scenario.env))
        fprint["command_env"] = {k: _from_root(v, root) for k, v in env.items()} if root else env
    if scenario.ranks > 1:
        argv = scenario.command
        fprint["ranks"] = scenario.ranks
        fprint["launcher"] = argv[2] if len(argv) > 2 and argv[1] == "-m" else os.path.basename(argv[0])
    return {**fprint, "malloc": mode, **({"device": device} if device else {})}


@dataclass(frozen=True)
class Ask:
    """What every step of one case reads: the case, its mark (the case's expectation applied), the session's options,
    device and setup, and the function that runs a measured child."""

    case: Case
    mark: BudgetMark
    options: Options
    device: dict[str, Any]
    hardware: dict[str, Any]
    run_child: RunChild
    ci: bool


@dataclass(frozen=True)
class Judged:
    """A measured case past its verdict: the row as asked and as judged, the baseline it was judged against, its
    fingerprint now, its baseline file, and whether the verdict records an entry."""

    asked: Result
    result: Result
    measurement: Measurement
    baseline: Entry | None
    fingerprint: dict[str, Any]
    path: Path
    write_baseline: bool


def run(case: Case, mark: BudgetMark, options: Options, device: dict[str, Any], hardware: dict[str, Any], run_child: RunChild, *,
        ci: bool, worker: dict[str, Any] | None = None) -> Outcome:
    """Measure the case in a child where it can run here, judge it against its budget and baseline: the steps in
    order (precheck, measure, judge, record, extras), each ending the case early with its Outcome where it decides."""
    expect = case.expect if case.expect is not None else mark.expect
    ask = Ask(case, replace(mark, expect=expect), options, device, hardware, run_child, ci)
    checked = precheck(ask, asked_row(ask, worker))
    if isinstance(checked, Outcome):
        return checked
    ask, asked = checked
    measured = measure(ask, asked)
    if isinstance(measured, Outcome):
        return measured
    judged = judge_case(ask, asked, measured)
    if isinstance(judged, Outcome):
        return judged
    recorded = record(ask, judged)
    if isinstance(recorded, Outcome):
        return recorded
    result, write = recorded
    return Outcome(extras(ask, result, judged), write)


def asked_row(ask: Ask, worker: dict[str, Any] | None) -> Result:
    """The row as asked, before anything ran: an error until a step says otherwise."""
    case, mark = ask.case, ask.mark
    return Result(nodeid=case.nodeid + (f"::{case.label}" if case.label else ""), scenario=case.scenario.name,
                  scale=ask.options.scale, verdict=Verdict.ERROR, passed=False, message="", label=case.label,
                  fixes=tuple(case.scenario.fixes), device=mark.device, budget=mark.budget,
                  expect=mark.expect, budget_origin=mark.origin,
                  tolerance=mark.tolerance, worker=worker)


def precheck(ask: Ask, asked: Result) -> Outcome | tuple[Ask, Result]:
    """Whether the case can be measured here (else its skip or error); a VRAM budget this host cannot check is taken
    off the mark, and the row says so."""
    mark, options = ask.mark, ask.options
    reason, needs_gpu = unmeasurable(ask.case.scenario, mark, options.scale, ask.device)
    unchecked = vram_unchecked(mark, ask.device)
    if unchecked and not reason and options.require_gpu:
        reason, needs_gpu = f"VRAM budget {format_size(mark.budget.vram)} needs a CUDA GPU to check; this host has none", True
    if reason and needs_gpu and options.require_gpu:
        message = f"{reason}, and --gpu-budget-require-gpu says this runner must have one"
        return Outcome(asked.but(verdict=Verdict.ERROR, message=message))
    if reason:
        return Outcome(asked.but(verdict=Verdict.SKIPPED, passed=True, message=reason))
    if unchecked:  # judged on what this host measures: the row keeps the declared budget and says why
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
                                 message=f"its environment cannot be made: {exc}"))
    except RemoteFailed as exc:
        return Outcome(asked.but(verdict=Verdict.ERROR, message=str(exc)))
    if measurement.error_kind == "missing-dependency":
        return Outcome(asked.but(verdict=Verdict.SKIPPED, passed=True, message=measurement.error.message))
    return measurement


def judge_case(ask: Ask, asked: Result, measurement: Measurement) -> Outcome | Judged:
    """The measurement against the budget and the stored baseline (an unreadable baseline file is the case's error)."""
    case, mark, options = ask.case, ask.mark, ask.options
    path = BaselineStore.of(options.baselines, ask.hardware).path_for(keys.case_of(case.nodeid, case.module, case.name, case.label))
    baseline, broken, fprint, setup = _stored(case, mark, options, ask.hardware, path, measurement.environment)
    if broken:
        return Outcome(asked.but(measurement=measurement, verdict=Verdict.ERROR, message=broken))
    unmeasured = vram_unmeasured(case.scenario, mark, measurement)
    if unmeasured:
        return Outcome(asked.but(measurement=measurement, verdict=Verdict.ERROR, message=unmeasured))
    verdict = judge(measurement, mark.budget, baseline, mark.tolerance, ci=ask.ci, update=options.update,
                    expect=mark.expect, setup=setup, params=case.scenario.params_for(options.scale), steps=mark.steps)
    result = asked.but(
        measurement=measurement, verdict=verdict.verdict, passed=verdict.passed,
        message="; ".join([*asked.unchecked, verdict.message]), change=verdict.change,
        growth_projection=None if verdict.projection is None else verdict.projection.record(),
        baseline=baseline,
        fingerprint_changed=tuple(setup.described) if baseline else (),
        setup=setup if baseline else None)
    return Judged(asked, result, measurement, baseline, fprint, path, verdict.write_baseline)


def record(ask: Ask, judged: Judged) -> Outcome | tuple[Result, dict[str, Any] | None]:
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
        return Outcome(judged.asked.but(measurement=judged.measurement, verdict=Verdict.ERROR, message=failed))
    entry = baselines.entry_from(kept, scenario.to_json(scale), ask.mark.tolerance, judged.fingerprint,
                                 datetime.date.today().isoformat(), spread)
    write = PendingWrite(str(path), scale, ask.case.key, entry)
    message = result.message
    if spread is not None:
        message = (message if judged.write_baseline else f"{message}; baseline re-recorded") + "; " + \
            recorded_text(kept, spread)
    return result.but(message=message), write


def extras(ask: Ask, result: Result, judged: Judged) -> Result:
    """What a judged row gets beside its verdict: the cheapest passing fixes (--gpu-budget-remediate), the memory
    snapshot of a failing CUDA case (--gpu-budget-snapshot=rerun)."""
    options, mark, measurement = ask.options, ask.mark, judged.measurement
    if options.remediate and remediate.needs_remedy(measurement, mark.budget):
        def trial(candidate: Scenario) -> remediate.Trial:
            return remediate.trial_outcome(ask.run_child(candidate, None), mark.budget)

        remedy = remediate.search(ask.case.scenario, trial, cuda=mark.device == "cuda",
                                  max_runs=options.remediate_max_runs)
        message = result.message if result.passed else f"{result.message}; {remediation_text(remedy)}"
        result = result.but(remediation=remedy, message=message)
    stored = judged.baseline.peaks if judged.baseline else None
    if not result.passed and options.snapshot == "rerun" and artifacts.wants_snapshot(measurement, mark, stored):
        result = result.but(**_snapshot_run(ask.case.scenario, ask.run_child, options.snapshots, result.nodeid))
    return result


def record_runs(scenario: Scenario, run_child: RunChild, first: Measurement,
                runs: int) -> tuple[Measurement, Spread | None, str | None]:
    """The run a baseline entry keeps and the spread of `runs` fresh runs (`first`, the judged one, and runs - 1 more
    children through the session's runner), or why it cannot be recorded: a further run that failed records
    nothing. One run: `first`, no spread (the entry is as one recorded before --gpu-budget-record-runs)."""
    if runs <= 1:
        return first, None, None
    measured = [first]
    for index in range(2, runs + 1):
        again = run_child(scenario, None)
        if not again.ok:
            error = again.error
            return first, None, (f"recording run {index} of {runs} failed ({error.kind}): {error.message}; "
                                 "nothing recorded")
        measured.append(again)
    return baselines.median_run(measured), Spread.of([m.peaks for m in measured]), None


def recorded_text(kept: Measurement, spread: Spread) -> str:
    """What the row says of an entry recorded over several runs: the run kept, and the spread of each gated figure."""
    each = ", ".join(f"{metric} {format_size(size)}" for metric, size in spread.by_metric.items())
    return (f"{spread.runs} fresh runs: the median run's figures kept (host RAM {format_size(kept.peaks.gated_ram)}), "
            f"spread {each or 'none measured'}")


def environment_skips(failed: EnvironmentFailed, device: dict[str, Any]) -> bool:
    """An environment that needs another torch is a skip on a host without CUDA (the registry's Linux torch is a CUDA
    build, which such a host could not run as it is meant to), and an error where a GPU would run it."""
    return failed.kind == "torch" and not device.get("cuda")


def _from_root(value: str, root: Path) -> str:
    """An environment value with each of its paths under `root` written as "<project>/..." (a PYTHONPATH's parts)."""
    parts = []
    for part in value.split(os.pathsep):
        path = Path(part)
        parts.append(f"<project>/{path.relative_to(root).as_posix()}" if path.is_absolute() and
                     path.is_relative_to(root) else part)
    return os.pathsep.join(parts)


def _stored(case: Case, mark: BudgetMark, options: Options, hardware: dict[str, Any], path: Path,
            environment: EnvironmentRecord | None = None):
    """The case's baseline entry (None), why its file could not be read (None), its fingerprint now, and how this
    setup relates to the baseline's."""
    scenario = case.scenario
    store = BaselineStore.of(options.baselines, hardware)
    found = store.lookup(keys.case_of(case.nodeid, case.module, case.name, case.label), options.scale, case.namesakes,
                         path)
    baseline = found.entry
    root = files.project_root(Path(case.module).resolve().parent) if scenario.env else None
    fprint = fingerprint_for(hardware, scenario, options.malloc, case.nodeid, mark.device, environment, root)
    setup = fingerprint.between(baseline.fingerprint if baseline else None, fprint, found.packages,
                                store.package_versions)
    if scenario.command is not None and baseline is not None and \
            fingerprint.Facts.from_json(baseline.fingerprint).preload != fingerprint.Facts.from_json(fprint).preload:
        # A command's interpreter imports its libraries afresh: the CPU model, the kernel and the packages installed
        # move its footprint as they move the measuring child's floor, so that shift comes off its figure too; the
        # preload list moves the child's floor alone, so across preload lists nothing is taken off.
        setup = replace(setup, floor_shift=0, floor_moved=False)
    return baseline, found.broken, fprint, setup


def _snapshot_run(scenario: Scenario, run_child: RunChild, folder: Path, nodeid: str) -> dict[str, Any]:
    """Run a failing CUDA case once more with the allocation recorder on, and keep its memory snapshot.

    The recorder costs host RAM and time, so the judged run never records; this
    second run is reported beside the row ("snapshot_run"), never judged or recorded.
    """
    path = artifacts.snapshot_path()
    try:
        again = run_child(scenario, {"path": path})
        out: dict[str, Any] = {"snapshot_run": SnapshotRun(again.status, again.peaks, again.error, again.wall_seconds)}
        if again.snapshot:
            kept = artifacts.keep_snapshot(again.snapshot, folder, nodeid)
            if kept:
                out["snapshot"] = kept
        return out
    finally:
        Path(path).unlink(missing_ok=True)
