"""A sweep: one judged case measured again at each version of a swept package, reported beside its verdict.

The version a case runs at without the sweep (the running environment's, or
its own environment's) is the reference: that measurement is the case's
gated one, judged and baselined as usual. Every other version is the case
again in an environment with `PACKAGE==VERSION` laid over its own (isolate/
environment.py makes it, once per session), measured through the same child
runner, never judged, never recorded: a SweepPoint with its peaks and change
against the reference (none where the reference failed: its peak is the
peak so far, not the case's figure). A version whose peak breaks the case's
budget is flagged (its point's over_budget, naming each breach), still not
judged: the table shows which versions break it, the gate stays the
reference's. A version that cannot be made, imported or run is a point named
as such, and the other versions are still measured.
A command whose program would not run in the versions' environments (a
console script of the running environment other than torchrun's or
accelerate's, which run as their modules there; another interpreter:
isolate/program.py) fails the case instead: its versions would all measure
the running packages.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from importlib import metadata

from packaging.requirements import Requirement

from gpu_budget.declare.environment import Environment, canonical
from gpu_budget.declare.scenario import Scenario
from gpu_budget.declare.sweep import SweepAxis
from gpu_budget.isolate.environment import EnvironmentFailed
from gpu_budget.isolate.program import OutsideEnvironment
from gpu_budget.isolate.protocol import RunChild
from gpu_budget.isolate.remote import RemoteFailed
from gpu_budget.isolate.shadowed import shadowing
from gpu_budget.judge.compare import rank_breaches
from gpu_budget.model.budget import Budget
from gpu_budget.model.figures import Peaks
from gpu_budget.model.metric import SHOWN
from gpu_budget.model.result import Failure, Measurement, Result, SweepPoint, Verdict
from gpu_budget.requires import MissingDependency


def reference_version(package: str, measured: Measurement, declared: Environment | None = None) -> str | None:
    """The version of `package` the case ran at: its environment's, else the running environment's (None: absent);
    where its environment could not be made (`declared`, no environment measured), the version it pins."""
    env = measured.environment
    if env is None and declared is not None and package in declared.names:
        return _pinned(package, declared)
    if env is not None and package in env.named:
        return env.named[package]
    if env is not None and package in env.overlay:
        return env.overlay[package]
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return None


def _pinned(package: str, declared: Environment) -> str:
    """The version `declared` pins `package` at (`==V`), else its requirement as written."""
    lines = [Requirement(line) for line in declared.lines]
    wanted = [r for r in lines if canonical(r.name) == package]
    pins = [spec.version for r in wanted for spec in r.specifier if spec.operator in ("==", "===")]
    return pins[0] if len(pins) == 1 else " ".join(str(r) for r in wanted)


def same_version(a: str | None, b: str | None) -> bool:
    from packaging.version import InvalidVersion, Version

    if a is None or b is None:
        return False
    try:  # as released: "5.23" is "5.23.0", "2.13.0+cpu" is 2.13.0
        return Version(Version(a).public) == Version(Version(b).public)
    except InvalidVersion:
        return a == b


def change(reference: Peaks, other: Peaks) -> dict[str, float | None]:
    """Per gated figure, the relative change of `other` against `reference` (None where either lacks it)."""
    out: dict[str, float | None] = {}
    for metric in SHOWN:
        before, after = getattr(reference, metric), getattr(other, metric)
        if before is not None or after is not None:
            out[metric] = None if not before or after is None else round((after - before) / before, 6)
    return out


def sweep_case(scenario: Scenario, axes: Sequence[SweepAxis], reference: Measurement, run_child: RunChild,
               cuda: bool, budget: Budget | None = None) -> tuple[SweepPoint, ...]:
    """The case at each swept version: the reference point first (its figures are the gated run's), then the others;
    each flagged where its peaks break `budget` (the case's)."""
    points: list[SweepPoint] = []
    budget = budget or Budget()
    for axis in axes:
        ran_at = reference_version(axis.package, reference, scenario.environment)
        points.append(SweepPoint(axis.package, ran_at or "(not installed)", True, "ok" if reference.ok else "error",
                                 reference.peaks, {}, "" if reference.ok else _failed(reference),
                                 reference.environment, _over(reference, budget)))
        ahead = shadowing(axis.package)  # a copy every environment's release would stay behind: none measured
        for version in axis.versions:
            if same_version(version, ran_at):
                continue
            points.append(_point(scenario, axis, version, reference, run_child, cuda, budget) if ahead is None else
                          SweepPoint(axis.package, version, False, "error", message=(
                              f"{axis.requirement(version)}: not measured: {axis.package} is imported from {ahead}, "
                              "ahead of every environment's site folder (a folder of the tests, or of PYTHONPATH), "
                              "so each version would run that copy")))
    return tuple(points)


def swept(result: Result, scenario: Scenario, axes: Sequence[SweepAxis], run_child: RunChild, cuda: bool,
          unmade: str = "") -> Result:
    """The judged case's row with its sweep; an error where its command would not run in a version's environment
    (the gated reference kept): every version would measure the running packages and be reported as its own.
    unmade: why the case's own environment could not be made (no measurement): the reference's error, the other
    versions measured all the same."""
    reference = result.measurement
    if reference is None:
        reference = Measurement(status="error", peaks=Peaks(), error=Failure(kind="environment", message=unmade))
    try:
        return result.but(sweep=sweep_case(scenario, axes, reference, run_child, cuda, result.budget))
    except OutsideEnvironment as exc:
        return result.but(verdict=Verdict.ERROR, passed=False, message=f"the sweep cannot run this command: {exc}")


def _point(scenario: Scenario, axis: SweepAxis, version: str, reference: Measurement, run_child: RunChild,
           cuda: bool, budget: Budget) -> SweepPoint:
    line = axis.requirement(version)
    base = scenario.environment or Environment(requirements=(line,))
    swept = replace(scenario, environment=base.with_requirement(line))
    try:
        measured = run_child(swept, None)
    except EnvironmentFailed as exc:
        status = "skipped" if exc.kind == "torch" and not cuda else "error"
        return SweepPoint(axis.package, version, False, status, message=str(exc))
    except OutsideEnvironment:  # the case's command, not this version: the case fails (swept()), not a point
        raise
    except (MissingDependency, RemoteFailed) as exc:
        return SweepPoint(axis.package, version, False, "error", message=f"{line}: {exc}")
    except Exception as exc:  # noqa: BLE001  this version's failure (a prepare failing in the running environment
        # raises forkserver's RuntimeError): its point, never an exception that loses the gated reference's row
        return SweepPoint(axis.package, version, False, "error", message=f"{line}: {type(exc).__name__}: {exc}")
    if not measured.ok:
        return SweepPoint(axis.package, version, False, "error", measured.peaks, message=f"{line}: {_failed(measured)}",
                          environment=measured.environment, over_budget=_over(measured, budget))
    # a reference that failed holds the peak so far, not the case's figure: nothing to change against
    changed = change(reference.peaks, measured.peaks) if reference.ok else {}
    return SweepPoint(axis.package, version, False, "ok", measured.peaks, changed, environment=measured.environment,
                      over_budget=_over(measured, budget))


def _over(measured: Measurement, budget: Budget) -> tuple[str, ...]:
    """How the run's peaks break the case's budget (each rank's, a launcher case's), as its verdict would say; a failed
    run's peak so far counts too: it only grows."""
    return tuple(rank_breaches(measured, budget))


def _failed(measured: Measurement) -> str:
    error = measured.error
    return f"{error.kind}: {error.message}" if error is not None else "failed"
